// TurboJPEG for JPEG (one handle per thread), OpenCV imgcodecs for the rest when built with it.
#include "cvtrain/data/image_decode.h"

#include <fmt/format.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "cvtrain/core/error.h"

#ifdef CVTRAIN_WITH_IMGCODECS
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace cvtrain {
namespace {

// Chroma upsampled by replication instead of "fancy" interpolation: visibly the same for
// training crops that are shrunk afterwards, and a good part of the decode time saved.
constexpr int kDecodeFlags = TJFLAG_FASTUPSAMPLE;

bool is_jpeg(const std::vector<uint8_t>& bytes) { return bytes.size() > 3 && bytes[0] == 0xFF && bytes[1] == 0xD8; }

struct TjCloser {
  void operator()(void* handle) const { tjDestroy(handle); }
};

// TurboJPEG handles are not thread-safe but cheap to keep: one per decode thread.
void* decompressor() {
  thread_local std::unique_ptr<void, TjCloser> handle(tjInitDecompress());
  return handle.get();
}

struct JpegHeader {
  int width = 0, height = 0, colorspace = 0;
};

JpegHeader read_header(const std::vector<uint8_t>& bytes, const std::string& name) {
  JpegHeader h;
  int subsampling = 0;
  if (tjDecompressHeader3(decompressor(), bytes.data(), bytes.size(), &h.width, &h.height, &subsampling, &h.colorspace) != 0)
    throw Error(fmt::format("{}: not a readable JPEG ({})", name, tjGetErrorStr2(decompressor())));
  return h;
}

int scaled(int dim, JpegScale s) { return (dim * s.num + s.den - 1) / s.den; }

// CMYK JPEGs (Photoshop writes them inverted, as nearly all in the wild are): R = C*K/255 etc.
Image cmyk_to_rgb(const std::vector<uint8_t>& cmyk, int width, int height) {
  Image image{std::vector<uint8_t>(static_cast<size_t>(width) * height * 3), height, width, 3};
  for (size_t p = 0, n = static_cast<size_t>(width) * height; p < n; ++p) {
    const unsigned k = cmyk[p * 4 + 3];
    for (int c = 0; c < 3; ++c) image.pixels[p * 3 + c] = static_cast<uint8_t>(cmyk[p * 4 + c] * k / 255);
  }
  return image;
}

Image decode_jpeg(const std::vector<uint8_t>& bytes, const std::string& name, JpegScale scale) {
  const JpegHeader h = read_header(bytes, name);
  const int width = scaled(h.width, scale), height = scaled(h.height, scale);
  const bool cmyk = h.colorspace == TJCS_CMYK || h.colorspace == TJCS_YCCK;
  std::vector<uint8_t> pixels(static_cast<size_t>(width) * height * (cmyk ? 4 : 3));
  const int status = tjDecompress2(decompressor(), bytes.data(), bytes.size(), pixels.data(), width, 0, height,
                                   cmyk ? TJPF_CMYK : TJPF_RGB, kDecodeFlags);
  if (status != 0) {
    const std::string why = tjGetErrorStr2(decompressor());
    // Warnings (stray bytes, odd markers) still give a full image, as PIL accepts them; a file
    // that ends early leaves grey rows and is treated as corrupt, as PIL does.
    if (tjGetErrorCode(decompressor()) == TJERR_FATAL || why.find("Premature end") != std::string::npos)
      throw Error(fmt::format("{}: corrupt or truncated JPEG ({})", name, why));
  }
  if (cmyk) return cmyk_to_rgb(pixels, width, height);
  return Image{std::move(pixels), height, width, 3};
}

#ifdef CVTRAIN_WITH_IMGCODECS
Image decode_with_opencv(const std::vector<uint8_t>& bytes, const std::string& name) {
  const cv::Mat raw(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<uint8_t*>(bytes.data()));
  cv::Mat decoded = cv::imdecode(raw, cv::IMREAD_COLOR);  // 8-bit BGR whatever the depth, alpha dropped
  if (decoded.empty()) throw Error(fmt::format("{}: not a readable image", name));
  cv::cvtColor(decoded, decoded, cv::COLOR_BGR2RGB);
  Image image{std::vector<uint8_t>(decoded.total() * 3), decoded.rows, decoded.cols, 3};
  std::memcpy(image.pixels.data(), decoded.data, image.pixels.size());
  return image;
}
#endif

}  // namespace

std::optional<ImageSize> jpeg_size(const std::vector<uint8_t>& bytes, const std::string& name) {
  if (!is_jpeg(bytes)) return std::nullopt;
  const JpegHeader h = read_header(bytes, name);
  return ImageSize{h.width, h.height};
}

JpegScale jpeg_scale_covering(ImageSize full, ImageSize crop, ImageSize out) {
  // libjpeg-turbo's DCT scaling factors up to 1, smallest first.
  static constexpr JpegScale kFactors[] = {{1, 8}, {1, 4}, {3, 8}, {1, 2}, {5, 8}, {3, 4}, {7, 8}};
  for (const JpegScale s : kFactors) {
    // The crop after scaling, rounded down as a pixel rectangle would be.
    const double fx = static_cast<double>(scaled(full.width, s)) / full.width;
    const double fy = static_cast<double>(scaled(full.height, s)) / full.height;
    if (crop.width * fx >= out.width && crop.height * fy >= out.height) return s;
  }
  return JpegScale{};
}

Image decode_image(const std::vector<uint8_t>& bytes, const std::string& name, JpegScale scale) {
  if (bytes.empty()) throw Error(fmt::format("{}: empty file", name));
  if (is_jpeg(bytes)) return decode_jpeg(bytes, name, scale);
#ifdef CVTRAIN_WITH_IMGCODECS
  return decode_with_opencv(bytes, name);
#else
  throw Error(fmt::format("{}: only JPEG can be decoded (this build has no OpenCV imgcodecs)", name));
#endif
}

}  // namespace cvtrain
