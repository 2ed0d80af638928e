// Test images: JPEGs written with TurboJPEG (RGB, grayscale, CMYK), PNGs written by hand with
// zlib (8/16-bit, alpha), and small ImageFolder trees.
#pragma once

#include <turbojpeg.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "temp_dir.h"

namespace cvtrain::testing {

// Any pixels as a JPEG: `format` is a TurboJPEG pixel format (TJPF_RGB, TJPF_GRAY, TJPF_CMYK).
inline std::vector<uint8_t> encode_jpeg_pixels(const std::vector<uint8_t>& pixels, int w, int h, int format, int quality = 95,
                                               int subsampling = TJSAMP_420, int flags = 0) {
  tjhandle handle = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  if (format == TJPF_GRAY) subsampling = TJSAMP_GRAY;
  const int rc = tjCompress2(handle, pixels.data(), w, 0, h, format, &jpeg, &size, subsampling, quality, flags);
  std::vector<uint8_t> bytes;
  if (rc == 0) bytes.assign(jpeg, jpeg + size);
  tjFree(jpeg);
  tjDestroy(handle);
  if (rc != 0) throw std::runtime_error("tjCompress2 failed");
  return bytes;
}

// A w x h RGB picture of one continuous scene per `scene`: smooth random fields at three scales
// (value noise, falling off as natural images do), so two sizes of one scene are the same picture
// resized and two scenes are unrelated pictures.
inline std::vector<uint8_t> scene_rgb(int w, int h, int scene) {
  const auto lattice = [scene](int grid, int gx, int gy, int channel) {  // a repeatable value in [0, 1) per lattice point
    uint32_t v = static_cast<uint32_t>(scene * 7919 + grid * 104729 + gx * 31337 + gy * 2749 + channel * 65537);
    v ^= v >> 16, v *= 0x7feb352d, v ^= v >> 15, v *= 0x846ca68b, v ^= v >> 16;
    return (v & 0xffff) / 65536.0;
  };
  const auto field = [&](double u, double v, int channel) {
    double sum = 0, amplitude = 1;
    for (int grid = 3; grid <= 12; grid *= 2, amplitude /= 2) {
      const double x = u * grid, y = v * grid;
      const int x0 = static_cast<int>(x), y0 = static_cast<int>(y);
      const double fx = x - x0, fy = y - y0;
      const double top = lattice(grid, x0, y0, channel) * (1 - fx) + lattice(grid, x0 + 1, y0, channel) * fx;
      const double bottom = lattice(grid, x0, y0 + 1, channel) * (1 - fx) + lattice(grid, x0 + 1, y0 + 1, channel) * fx;
      sum += amplitude * (top * (1 - fy) + bottom * fy);
    }
    return sum / 1.75;
  };
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        rgb[(static_cast<size_t>(y) * w + x) * 3 + c] =
            static_cast<uint8_t>(std::clamp(255.0 * field((x + 0.5) / w, (y + 0.5) / h, c), 0.0, 255.0));
  return rgb;
}

// A w x h RGB JPEG of colour (red, 40, blue), no chroma subsampling (colours stay exact).
inline std::vector<uint8_t> encode_jpeg(int w, int h, uint8_t red, uint8_t blue = 40) {
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3, 40);
  for (size_t i = 0; i < rgb.size(); i += 3) {
    rgb[i] = red;
    rgb[i + 2] = blue;
  }
  return encode_jpeg_pixels(rgb, w, h, TJPF_RGB, 95, TJSAMP_444);
}

// A PNG from raw samples (big-endian when 16-bit): colour type 0 gray, 2 RGB, 6 RGBA;
// `exif_orientation` > 0 adds an eXIf chunk with that EXIF orientation (6: rotate 90° to view).
inline std::vector<uint8_t> encode_png(const std::vector<uint8_t>& samples, int w, int h, int color_type, int depth,
                                       int exif_orientation = 0) {
  const int channels = color_type == 0 ? 1 : color_type == 2 ? 3 : 4;
  const size_t row = static_cast<size_t>(w) * channels * depth / 8;
  std::vector<uint8_t> raw;
  for (int y = 0; y < h; ++y) {
    raw.push_back(0);  // filter: none
    raw.insert(raw.end(), samples.begin() + static_cast<std::ptrdiff_t>(y * row), samples.begin() + static_cast<std::ptrdiff_t>((y + 1) * row));
  }
  uLongf packed_size = compressBound(raw.size());
  std::vector<uint8_t> packed(packed_size);
  compress(packed.data(), &packed_size, raw.data(), raw.size());
  packed.resize(packed_size);
  std::vector<uint8_t> png{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  const auto be32 = [](std::vector<uint8_t>& out, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
  };
  const auto chunk = [&](const char* type, const std::vector<uint8_t>& data) {
    be32(png, static_cast<uint32_t>(data.size()));
    std::vector<uint8_t> body(type, type + 4);
    body.insert(body.end(), data.begin(), data.end());
    png.insert(png.end(), body.begin(), body.end());
    be32(png, static_cast<uint32_t>(crc32(0, body.data(), static_cast<uInt>(body.size()))));
  };
  std::vector<uint8_t> header;
  be32(header, static_cast<uint32_t>(w));
  be32(header, static_cast<uint32_t>(h));
  header.insert(header.end(), {static_cast<uint8_t>(depth), static_cast<uint8_t>(color_type), 0, 0, 0});
  chunk("IHDR", header);
  if (exif_orientation > 0)  // big-endian TIFF header, one IFD entry: tag 0x0112, SHORT, count 1
    chunk("eXIf",
          {'M', 'M', 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, static_cast<uint8_t>(exif_orientation), 0, 0, 0, 0, 0, 0});
  chunk("IDAT", packed);
  chunk("IEND", {});
  return png;
}

// `jpeg` with an EXIF APP1 segment after its SOI whose IFD0 holds `tags` (tag, SHORT value), in
// Intel (II) or Motorola (MM) byte order, as cameras and phones write either.
inline std::vector<uint8_t> with_exif(std::vector<uint8_t> jpeg, const std::vector<std::pair<uint16_t, uint16_t>>& tags, bool big_endian) {
  std::vector<uint8_t> payload{'E', 'x', 'i', 'f', 0, 0};
  const auto put16 = [&](uint16_t v) {
    const std::vector<uint8_t> b =
        big_endian ? std::vector<uint8_t>{uint8_t(v >> 8), uint8_t(v)} : std::vector<uint8_t>{uint8_t(v), uint8_t(v >> 8)};
    payload.insert(payload.end(), b.begin(), b.end());
  };
  const auto put32 = [&](uint32_t v) {
    put16(static_cast<uint16_t>(big_endian ? v >> 16 : v & 0xFFFF));
    put16(static_cast<uint16_t>(big_endian ? v & 0xFFFF : v >> 16));
  };
  payload.push_back(big_endian ? 'M' : 'I');
  payload.push_back(big_endian ? 'M' : 'I');
  put16(42);
  put32(8);  // IFD0 right after the TIFF header
  put16(static_cast<uint16_t>(tags.size()));
  for (const auto& [tag, value] : tags) {
    put16(tag);
    put16(3);  // SHORT
    put32(1);
    put16(value);
    put16(0);
  }
  put32(0);
  const size_t length = payload.size() + 2;
  std::vector<uint8_t> segment{0xFF, 0xE1, uint8_t(length >> 8), uint8_t(length)};
  segment.insert(segment.end(), payload.begin(), payload.end());
  jpeg.insert(jpeg.begin() + 2, segment.begin(), segment.end());
  return jpeg;
}

inline void write_bytes(const TempDir& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  dir.write(name, "");
  std::ofstream(dir.file(name), std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Class folders c0 and c1 under `root` holding `count` large JPEGs of noise (megabytes of entropy-
// coded data each): slow to decode, for input-bound runs. `flags`: TurboJPEG's (TJFLAG_PROGRESSIVE).
inline void write_noise_jpeg_folder(const TempDir& dir, const std::string& root, int count, int w, int h, uint32_t seed, int flags = 0) {
  std::vector<uint8_t> noise(static_cast<size_t>(w) * h * 3);
  for (auto& v : noise) v = static_cast<uint8_t>((seed = seed * 1664525u + 1013904223u) >> 24);
  const std::vector<uint8_t> jpeg = encode_jpeg_pixels(noise, w, h, TJPF_RGB, 95, TJSAMP_420, flags);
  for (int i = 0; i < count; ++i) write_bytes(dir, root + "/c" + std::to_string(i % 2) + "/" + std::to_string(i) + ".jpg", jpeg);
}

// 2 classes x `per_class` solid-colour JPEGs (48x40 red, 40x48 blue): easy to tell apart.
inline void write_red_blue_folder(const TempDir& dir, const std::string& root, int per_class) {
  for (int i = 0; i < per_class; ++i) {
    const auto shade = static_cast<uint8_t>(180 + i);
    write_bytes(dir, root + "/red/" + std::to_string(i) + ".jpg", encode_jpeg(48, 40, shade, 30));
    write_bytes(dir, root + "/blue/" + std::to_string(i) + ".jpg", encode_jpeg(40, 48, 30, shade));
  }
}

}  // namespace cvtrain::testing
