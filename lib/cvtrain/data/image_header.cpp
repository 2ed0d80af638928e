// image_header_size: the fixed places each format keeps its size (PNG's IHDR, BMP's info header,
// WebP's VP8/VP8L/VP8X chunk, the netpbm text header); declared_file_bytes: where BMP, WebP and
// binary netpbm say how long the file is; describe_non_image: what other files begin with.
#include "cvtrain/data/image_header.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include <fmt/format.h>

namespace cvtrain {
namespace {

uint32_t big_endian32(const uint8_t* p) { return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3]; }
uint32_t little_endian32(const uint8_t* p) { return uint32_t{p[3]} << 24 | uint32_t{p[2]} << 16 | uint32_t{p[1]} << 8 | p[0]; }
uint32_t little_endian24(const uint8_t* p) { return uint32_t{p[2]} << 16 | uint32_t{p[1]} << 8 | p[0]; }
uint32_t little_endian14(const uint8_t* p) { return (uint32_t{p[1]} << 8 | p[0]) & 0x3FFF; }

bool starts_with(const std::vector<uint8_t>& bytes, size_t at, const char* text) {
  const size_t n = std::strlen(text);
  return bytes.size() >= at + n && std::memcmp(bytes.data() + at, text, n) == 0;
}

// Sides beyond int are held at its largest, which every pixel limit refuses.
ImageSize size_of(uint64_t width, uint64_t height) {
  constexpr uint64_t kLargest = std::numeric_limits<int>::max();
  return ImageSize{static_cast<int>(std::min(width, kLargest)), static_cast<int>(std::min(height, kLargest))};
}

std::optional<ImageSize> png_size(const std::vector<uint8_t>& b) {  // signature, then IHDR: length, type, width, height
  if (b.size() < 24 || !starts_with(b, 12, "IHDR")) return std::nullopt;
  return size_of(big_endian32(&b[16]), big_endian32(&b[20]));
}

std::optional<ImageSize> bmp_size(const std::vector<uint8_t>& b) {  // BITMAPINFOHEADER: width, then height (negative: top-down)
  if (b.size() < 26) return std::nullopt;
  const auto height = static_cast<int32_t>(little_endian32(&b[22]));
  return size_of(little_endian32(&b[18]), static_cast<uint64_t>(std::llabs(height)));
}

std::optional<ImageSize> webp_size(const std::vector<uint8_t>& b) {  // RIFF....WEBP, then the first chunk
  if (b.size() < 30) return std::nullopt;
  if (starts_with(b, 12, "VP8X")) return size_of(little_endian24(&b[24]) + 1, little_endian24(&b[27]) + 1);
  if (starts_with(b, 12, "VP8L")) {  // a signature byte, then 14-bit width - 1 and height - 1
    const uint32_t bits = little_endian32(&b[21]);
    return size_of((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1);
  }
  if (starts_with(b, 12, "VP8 ")) return size_of(little_endian14(&b[26]), little_endian14(&b[28]));  // after the frame tag and start code
  return std::nullopt;
}

// P1-P6: the magic, then width and height (and, but for P1 and P4, the largest value) as text,
// with comments (#...) and whitespace between; `count` of them read. `end`: where the last ended.
template <size_t count>
std::optional<std::array<uint64_t, count>> netpbm_numbers(const std::vector<uint8_t>& b, size_t* end = nullptr) {
  size_t at = 2;
  std::array<uint64_t, count> numbers{};
  const auto skip_space_and_comments = [&] {
    while (at < b.size() && (std::isspace(b[at]) || b[at] == '#')) {
      if (b[at] != '#') {
        ++at;
        continue;
      }
      while (at < b.size() && b[at] != '\n') ++at;
    }
  };
  for (uint64_t& number : numbers) {
    skip_space_and_comments();
    if (at >= b.size() || !std::isdigit(b[at])) return std::nullopt;
    while (at < b.size() && std::isdigit(b[at]) && number < (uint64_t{1} << 40)) number = number * 10 + (b[at++] - '0');
  }
  if (end) *end = at;
  return numbers;
}

std::optional<ImageSize> netpbm_size(const std::vector<uint8_t>& b) {
  const auto sides = netpbm_numbers<2>(b);
  return sides ? std::optional<ImageSize>(size_of((*sides)[0], (*sides)[1])) : std::nullopt;
}

// Binary gray and colour netpbm (P5, P6): the header, one whitespace byte, then width x height
// samples of one byte (two when the largest value is over 255) per channel.
std::optional<uint64_t> netpbm_file_bytes(const std::vector<uint8_t>& b) {
  if (b[1] != '5' && b[1] != '6') return std::nullopt;
  size_t end = 0;
  const auto numbers = netpbm_numbers<3>(b, &end);
  if (!numbers) return std::nullopt;
  const uint64_t channels = b[1] == '6' ? 3 : 1, sample_bytes = (*numbers)[2] > 255 ? 2 : 1;
  return end + 1 + (*numbers)[0] * (*numbers)[1] * channels * sample_bytes;
}

}  // namespace

std::optional<ImageSize> image_header_size(const std::vector<uint8_t>& bytes) {
  std::optional<ImageSize> size;
  if (starts_with(bytes, 0, "\x89PNG\r\n\x1a\n"))
    size = png_size(bytes);
  else if (starts_with(bytes, 0, "BM"))
    size = bmp_size(bytes);
  else if (starts_with(bytes, 0, "RIFF") && starts_with(bytes, 8, "WEBP"))
    size = webp_size(bytes);
  else if (bytes.size() > 2 && bytes[0] == 'P' && bytes[1] >= '1' && bytes[1] <= '6')
    size = netpbm_size(bytes);
  return size;
}

std::optional<uint64_t> declared_file_bytes(const std::vector<uint8_t>& bytes) {
  if (starts_with(bytes, 0, "BM") && bytes.size() >= 6) {  // BITMAPFILEHEADER's bfSize (0 from some writers: unknown)
    const uint32_t size = little_endian32(&bytes[2]);
    return size > 0 ? std::optional<uint64_t>(size) : std::nullopt;
  }
  if (starts_with(bytes, 0, "RIFF") && starts_with(bytes, 8, "WEBP")) return uint64_t{little_endian32(&bytes[4])} + 8;
  if (bytes.size() > 2 && bytes[0] == 'P') return netpbm_file_bytes(bytes);
  return std::nullopt;
}

const char* image_format_name(const std::vector<uint8_t>& bytes) {
  if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) return "JPEG";
  if (starts_with(bytes, 0, "\x89PNG\r\n\x1a\n")) return "PNG";
  if (starts_with(bytes, 0, "BM")) return "BMP";
  if (starts_with(bytes, 0, "RIFF") && starts_with(bytes, 8, "WEBP")) return "WebP";
  if (starts_with(bytes, 0, "II*") || (starts_with(bytes, 0, "MM") && bytes.size() >= 4 && bytes[2] == 0 && bytes[3] == '*')) return "TIFF";
  if (bytes.size() > 2 && bytes[0] == 'P' && bytes[1] >= '1' && bytes[1] <= '6') return "PNM";
  return "";
}

namespace {

// The first bytes as lower-case text, leading white space skipped (HTML and XML start anywhere).
std::string lowered_start(const std::vector<uint8_t>& bytes, size_t n) {
  size_t i = 0;
  while (i < bytes.size() && std::isspace(bytes[i])) ++i;
  std::string text;
  for (; i < bytes.size() && text.size() < n; ++i) text += static_cast<char>(std::tolower(bytes[i]));
  return text;
}

// Printable ASCII or UTF-8 text with line breaks and tabs, as far as the first 512 bytes go.
bool looks_like_text(const std::vector<uint8_t>& bytes) {
  const size_t n = std::min<size_t>(bytes.size(), 512);
  for (size_t i = 0; i < n; ++i)
    if (bytes[i] < 0x20 && bytes[i] != '\n' && bytes[i] != '\r' && bytes[i] != '\t') return false;
  return n > 0;
}

std::string quoted_start(const std::vector<uint8_t>& bytes) {
  std::string text;
  for (size_t i = 0; i < bytes.size() && text.size() < 40; ++i)
    text += bytes[i] == '\n' || bytes[i] == '\r' ? ' ' : static_cast<char>(bytes[i]);
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return "'" + text + (bytes.size() > 40 ? "...'" : "'");
}

}  // namespace

std::string describe_non_image(const std::vector<uint8_t>& bytes) {
  if (starts_with(bytes, 0, "version https://git-lfs"))
    return "a Git LFS pointer, not the image: its repository was cloned without the files (run `git lfs pull` there)";
  const std::string start = lowered_start(bytes, 16);
  if (start.rfind("<!doctype html", 0) == 0 || start.rfind("<html", 0) == 0)
    return "an HTML page, not an image (a download that got an error or login page?)";
  if (start.rfind("<svg", 0) == 0 || start.rfind("<?xml", 0) == 0) return "XML or SVG (vector graphics), not a raster image cvtrain reads";
  if (starts_with(bytes, 0, "GIF87a") || starts_with(bytes, 0, "GIF89a")) return "a GIF, which cvtrain does not read (convert it to PNG)";
  if (starts_with(bytes, 4, "ftyp")) return "a HEIF/HEIC/AVIF (ISO media) file, which cvtrain does not read (convert it to JPEG)";
  if (starts_with(bytes, 0, "%PDF")) return "a PDF document, not an image";
  if (bytes.size() >= 2 && bytes[0] == 0x1F && bytes[1] == 0x8B) return "gzip-compressed data, not an image";
  if (starts_with(bytes, 0, "PK\x03\x04")) return "a ZIP archive, not an image";
  if (looks_like_text(bytes)) return "text, not an image: " + quoted_start(bytes);
  std::string hex;
  for (size_t i = 0; i < std::min<size_t>(bytes.size(), 8); ++i) hex += fmt::format("{}{:02x}", i ? " " : "", bytes[i]);
  return fmt::format("not an image cvtrain reads (JPEG, PNG, BMP, WebP, TIFF, PNM): it starts with bytes {}", hex);
}

}  // namespace cvtrain
