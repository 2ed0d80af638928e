// JPEG through libjpeg's API (scaled, cropped, skipped scanlines), PNG through libpng's; OpenCV
// imgcodecs for the rest when built with it. libjpeg reports errors by longjmp: the setjmp frame holds no C++ objects.
#include "cvtrain/data/image_decode.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>

#include "cvtrain/core/error.h"
#include "cvtrain/data/image_header.h"
#include "cvtrain/data/libjpeg_errors.h"
#include "cvtrain/data/png_chunks.h"
#include "cvtrain/data/png_decode.h"

#ifdef CVTRAIN_WITH_IMGCODECS
#include <opencv2/core/utils/logger.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace cvtrain {

void check_image_pixels(ImageSize size, int64_t max_pixels, const std::string& name) {
  const int64_t pixels = int64_t{size.width} * size.height;
  if (max_pixels > 0 && pixels > max_pixels)
    throw Error(fmt::format("{}: {}x{} = {} pixels is more than data.max_image_pixels {} (a decompression bomb, or raise the limit)",
                            name, size.width, size.height, pixels, max_pixels));
}
namespace {

bool is_jpeg(const std::vector<uint8_t>& bytes) { return bytes.size() > 3 && bytes[0] == 0xFF && bytes[1] == 0xD8; }

int scaled(int dim, JpegScale s) { return (dim * s.num + s.den - 1) / s.den; }

struct JpegJob {
  const std::vector<uint8_t>* bytes = nullptr;
  JpegScale scale;
  PixelRect region;          // full-size coordinates; width 0: the whole image
  JpegChroma chroma = JpegChroma::replicated;
  bool header_only = false;
  ImageSize source;          // out: the size in the header
  bool cmyk = false;         // out: window.image holds 4-channel (inverted) CMYK
  ImageWindow window;        // out
};

// The rows [y0, y1) and columns [x0, x1) of the scaled image that cover the region.
PixelRect scaled_bounds(const JpegJob& job, ImageSize full) {
  if (job.region.width <= 0) return PixelRect{0, 0, full.width, full.height};
  const double fx = static_cast<double>(full.width) / job.source.width, fy = static_cast<double>(full.height) / job.source.height;
  const int x0 = std::clamp(static_cast<int>(std::floor(job.region.x * fx)), 0, full.width - 1);
  const int y0 = std::clamp(static_cast<int>(std::floor(job.region.y * fy)), 0, full.height - 1);
  const int x1 = std::clamp(static_cast<int>(std::ceil((job.region.x + job.region.width) * fx)) + 1, x0 + 1, full.width);
  const int y1 = std::clamp(static_cast<int>(std::ceil((job.region.y + job.region.height) * fy)) + 1, y0 + 1, full.height);
  return PixelRect{x0, y0, x1 - x0, y1 - y0};
}

// Runs libjpeg; false (with err.message set) when it reported an error.
bool run_libjpeg(JpegJob& job, libjpeg::ErrorManager& err) {
  jpeg_decompress_struct cinfo;
  cinfo.err = libjpeg::attach(err);
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, job.bytes->data(), static_cast<unsigned long>(job.bytes->size()));
  jpeg_read_header(&cinfo, TRUE);
  job.source = ImageSize{static_cast<int>(cinfo.image_width), static_cast<int>(cinfo.image_height)};
  if (job.header_only) {
    jpeg_destroy_decompress(&cinfo);
    return true;
  }
  job.cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  cinfo.out_color_space = job.cmyk ? JCS_CMYK : JCS_RGB;
  cinfo.scale_num = static_cast<unsigned>(job.scale.num);
  cinfo.scale_denom = static_cast<unsigned>(job.scale.den);
  cinfo.do_fancy_upsampling = job.chroma == JpegChroma::smooth ? TRUE : FALSE;
  cinfo.dct_method = JDCT_ISLOW;
  jpeg_start_decompress(&cinfo);
  const ImageSize full{static_cast<int>(cinfo.output_width), static_cast<int>(cinfo.output_height)};
  const PixelRect want = scaled_bounds(job, full);
  JDIMENSION x = static_cast<JDIMENSION>(want.x), width = static_cast<JDIMENSION>(want.width);
  if (width < cinfo.output_width) jpeg_crop_scanline(&cinfo, &x, &width);  // widened to whole blocks
  if (want.y > 0) jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(want.y));
  const int channels = cinfo.output_components;
  Image& image = job.window.image;
  image.width = static_cast<int>(cinfo.output_width);
  image.height = want.height;
  image.channels = channels;
  image.pixels.resize(static_cast<size_t>(image.width) * image.height * channels);
  const auto last_row = static_cast<JDIMENSION>(want.y + want.height);
  // Several rows a call: asked for one, libjpeg-turbo's merged 2:1 upsampler makes two and copies
  // the second out of a spare row (a twentieth of a scaled decode's time).
  constexpr JDIMENSION kRowsPerCall = 16;
  while (cinfo.output_scanline < last_row) {
    JSAMPROW rows[kRowsPerCall];
    const JDIMENSION n = std::min(kRowsPerCall, last_row - cinfo.output_scanline);
    for (JDIMENSION i = 0; i < n; ++i)
      rows[i] = image.pixels.data() + static_cast<size_t>(cinfo.output_scanline + i - want.y) * image.width * channels;
    jpeg_read_scanlines(&cinfo, rows, n);
  }
  job.window.full = full;
  job.window.x = static_cast<int>(x);
  job.window.y = want.y;
  jpeg_destroy_decompress(&cinfo);  // rows below the region are never decoded
  return true;
}

// CMYK JPEGs (Photoshop writes them inverted, as nearly all in the wild are): R = C*K/255 etc.
void cmyk_to_rgb(Image& image) {
  std::vector<uint8_t> rgb(static_cast<size_t>(image.width) * image.height * 3);
  for (size_t p = 0, n = static_cast<size_t>(image.width) * image.height; p < n; ++p) {
    const unsigned k = image.pixels[p * 4 + 3];
    for (int c = 0; c < 3; ++c) rgb[p * 3 + c] = static_cast<uint8_t>(image.pixels[p * 4 + c] * k / 255);
  }
  image.pixels = std::move(rgb);
  image.channels = 3;
}

JpegJob run_or_throw(JpegJob job, const std::string& name) {
  libjpeg::ErrorManager err;
  const bool decoded = run_libjpeg(job, err);
  if (!decoded && err.truncated)  // the data ran out before libjpeg found what it failed on
    throw Error(
        fmt::format("{}: truncated JPEG (the file ends after {} bytes, before its image data: {})", name, job.bytes->size(), err.message));
  if (!decoded) throw Error(fmt::format("{}: corrupt JPEG ({})", name, err.message));
  if (err.truncated) throw Error(fmt::format("{}: truncated JPEG (the data ends before the image does)", name));
  if (job.cmyk) cmyk_to_rgb(job.window.image);
  return job;
}

#ifdef CVTRAIN_WITH_IMGCODECS
Image decode_with_opencv(const std::vector<uint8_t>& bytes, const std::string& name) {
  // OpenCV logs a decoder's complaint to stderr (into a progress line); the error below names the file.
  static const bool silenced = (cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT), true);
  (void)silenced;
  // A file cut short is told before OpenCV meets it: its decoders' exceptions are printed to
  // stderr by imdecode itself, whatever the log level.
  const std::optional<uint64_t> declared = declared_file_bytes(bytes);
  if (declared && *declared > bytes.size())
    throw Error(fmt::format("{}: truncated {} (its header declares {} bytes, the file has {})", name, image_format_name(bytes), *declared,
                            bytes.size()));
  const cv::Mat raw(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<uint8_t*>(bytes.data()));
  // 8-bit BGR whatever the depth, alpha dropped; an EXIF orientation (a PNG's or WebP's) is left
  // unapplied, as Pillow leaves it and as the JPEG path does, so that every format reads as stored
  cv::Mat decoded = cv::imdecode(raw, cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION);
  if (decoded.empty()) {
    if (*image_format_name(bytes) == '\0') throw Error(fmt::format("{}: {}", name, describe_non_image(bytes)));
    throw Error(fmt::format("{}: a damaged {} file, or a kind of {} that OpenCV does not decode", name, image_format_name(bytes),
                            image_format_name(bytes)));
  }
  cv::cvtColor(decoded, decoded, cv::COLOR_BGR2RGB);
  Image image{std::vector<uint8_t>(decoded.total() * 3), decoded.rows, decoded.cols, 3};
  std::memcpy(image.pixels.data(), decoded.data, image.pixels.size());
  return image;
}
#endif

}  // namespace

std::optional<ImageSize> jpeg_size(const std::vector<uint8_t>& bytes, const std::string& name) {
  if (!is_jpeg(bytes)) return std::nullopt;
  JpegJob job;
  job.bytes = &bytes;
  job.header_only = true;
  return run_or_throw(std::move(job), name).source;
}

JpegScale jpeg_scale_covering(ImageSize full, ImageSize crop, ImageSize out) {
  // libjpeg-turbo's DCT scaling factors up to 1, smallest first.
  static constexpr JpegScale kFactors[] = {{1, 8}, {1, 4}, {3, 8}, {1, 2}, {5, 8}, {3, 4}, {7, 8}};
  for (const JpegScale s : kFactors) {
    const double fx = static_cast<double>(scaled(full.width, s)) / full.width;
    const double fy = static_cast<double>(scaled(full.height, s)) / full.height;
    if (crop.width * fx >= out.width && crop.height * fy >= out.height) return s;
  }
  return JpegScale{};
}

JpegScale jpeg_scale_halving(ImageSize full, ImageSize out) {
  for (const JpegScale s : {JpegScale{1, 8}, JpegScale{1, 4}, JpegScale{1, 2}})
    if (scaled(full.width, s) >= out.width && scaled(full.height, s) >= out.height) return s;
  return JpegScale{};
}

ImageWindow decode_jpeg_window(const std::vector<uint8_t>& bytes, const std::string& name, JpegScale scale, PixelRect region,
                               JpegChroma chroma) {
  if (!is_jpeg(bytes)) throw Error(fmt::format("{}: not a JPEG", name));
  JpegJob job;
  job.bytes = &bytes;
  job.scale = scale;
  job.chroma = chroma;
  if (chroma == JpegChroma::smooth && region.width > 0) {
    // Smoothed chroma at the window's edges is interpolated from what the window has: keep the
    // edges one chroma block (at most 16 pixels) away from the region.
    constexpr int kMargin = 16;
    const int x = std::max(0, region.x - kMargin), y = std::max(0, region.y - kMargin);
    region = PixelRect{x, y, region.x + region.width + kMargin - x, region.y + region.height + kMargin - y};
  }
  job.region = region;
  return run_or_throw(std::move(job), name).window;
}

Image decode_image(const std::vector<uint8_t>& bytes, const std::string& name, JpegScale scale, JpegChroma chroma) {
  if (bytes.empty()) throw Error(fmt::format("{}: empty file", name));
  if (is_jpeg(bytes)) return decode_jpeg_window(bytes, name, scale, PixelRect{}, chroma).image;
  if (is_png(bytes)) {
    if (const std::optional<std::string> damage = png_damage(bytes)) throw Error(fmt::format("{}: {}", name, *damage));
    return decode_png(bytes, name);
  }
#ifdef CVTRAIN_WITH_IMGCODECS
  return decode_with_opencv(bytes, name);
#else
  throw Error(fmt::format("{}: only JPEG can be decoded (this build has no OpenCV imgcodecs)", name));
#endif
}

}  // namespace cvtrain
