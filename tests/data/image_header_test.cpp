// image_header_size reads the size where each format keeps it: the first 32 bytes of files Pillow
// wrote (a 37 x 21 image) are all it needs, and all it gets here.
#include <catch2/catch.hpp>

#include "cvtrain/data/image_header.h"

using namespace cvtrain;

namespace {

std::optional<std::pair<int, int>> size_of(std::vector<uint8_t> bytes) {
  const auto size = image_header_size(bytes);
  if (!size) return std::nullopt;
  return std::pair{size->width, size->height};
}

}  // namespace

TEST_CASE("image headers give the size of PNG, BMP, WebP (lossy, lossless, extended) and PPM files", "[data]") {
  const std::pair<int, int> written{37, 21};
  CHECK(size_of({0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
                 0x00, 0x00, 0x00, 0x25, 0x00, 0x00, 0x00, 0x15, 0x08, 0x02, 0x00, 0x00, 0x00, 0x4e, 0x86, 0xb0}) == written);
  CHECK(size_of({0x42, 0x4d, 0x66, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x36, 0x00, 0x00, 0x00, 0x28, 0x00,
                 0x00, 0x00, 0x25, 0x00, 0x00, 0x00, 0x15, 0x00, 0x00, 0x00, 0x01, 0x00, 0x18, 0x00, 0x00, 0x00}) == written);
  CHECK(size_of({0x52, 0x49, 0x46, 0x46, 0x90, 0x03, 0x00, 0x00, 0x57, 0x45, 0x42, 0x50, 0x56, 0x50, 0x38, 0x20,
                 0x84, 0x03, 0x00, 0x00, 0xb0, 0x14, 0x00, 0x9d, 0x01, 0x2a, 0x25, 0x00, 0x15, 0x00, 0x3e, 0x6d}) == written);
  CHECK(size_of({0x52, 0x49, 0x46, 0x46, 0x7a, 0x09, 0x00, 0x00, 0x57, 0x45, 0x42, 0x50, 0x56, 0x50, 0x38, 0x4c,
                 0x6e, 0x09, 0x00, 0x00, 0x2f, 0x24, 0x00, 0x05, 0x00, 0x85, 0x04, 0x01, 0x00, 0x08, 0x38, 0xe9}) == written);
  CHECK(size_of({0x52, 0x49, 0x46, 0x46, 0xc8, 0x06, 0x00, 0x00, 0x57, 0x45, 0x42, 0x50, 0x56, 0x50, 0x38, 0x58,
                 0x0a, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x24, 0x00, 0x00, 0x14, 0x00, 0x00, 0x41, 0x4c}) == written);
  CHECK(size_of({0x50, 0x36, 0x0a, 0x33, 0x37, 0x20, 0x32, 0x31, 0x0a, 0x32, 0x35, 0x35, 0x0a, 0xa2, 0x44, 0x0a}) == written);
  const std::string commented = "P5\n# a comment\n37\n# another\n  21 255\n";
  CHECK(size_of({commented.begin(), commented.end()}) == written);
}

TEST_CASE("image headers: a size beyond int is held at the largest, and other bytes tell none", "[data]") {
  std::vector<uint8_t> png = {0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48,
                              0x44, 0x52, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x02, 0x08, 0x02};
  CHECK(size_of(png) == std::pair{2147483647, 2});
  png.resize(20);  // cut inside IHDR
  CHECK_FALSE(size_of(png));
  CHECK_FALSE(size_of({0xff, 0xd8, 0xff, 0xe0}));  // JPEG: jpeg_size's
  CHECK_FALSE(size_of({'I', 'I', 42, 0}));        // TIFF
  CHECK_FALSE(size_of({}));
  const std::string text = "Pasta recipe";
  CHECK_FALSE(size_of({text.begin(), text.end()}));
}

TEST_CASE("image formats are named from their first bytes, and anything else is not", "[data]") {
  const auto name = [](std::vector<uint8_t> bytes) { return std::string(image_format_name(bytes)); };
  CHECK(name({0xff, 0xd8, 0xff, 0xe0}) == "JPEG");
  CHECK(name({0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a}) == "PNG");
  CHECK(name({'B', 'M', 0x66, 0x09}) == "BMP");
  CHECK(name({'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'E', 'B', 'P'}) == "WebP");
  CHECK(name({'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'A', 'V', 'E'}).empty());  // a sound, not a picture
  CHECK(name({'I', 'I', 42, 0}) == "TIFF");
  CHECK(name({'M', 'M', 0, 42}) == "TIFF");
  CHECK(name({'M', 'M', 'x', 'y'}).empty());
  CHECK(name({'P', '6', '\n'}) == "PNM");
  CHECK(name({0xff, 0xd8}).empty());  // too short to say
  CHECK(name({'G', 'I', 'F', '8', '9', 'a'}).empty());
  CHECK(name({}).empty());
}

TEST_CASE("image headers say how long BMP, WebP and binary netpbm files are, so a file cut short is told apart", "[data]") {
  // The first bytes of the 37 x 21 files above: Pillow wrote a 2,406-byte BMP, a 920-byte WebP and
  // a 2,344-byte PPM (13 header bytes, then 37 x 21 x 3 samples).
  CHECK(declared_file_bytes({0x42, 0x4d, 0x66, 0x09, 0x00, 0x00}) == uint64_t{2406});
  CHECK(declared_file_bytes({0x52, 0x49, 0x46, 0x46, 0x90, 0x03, 0x00, 0x00, 0x57, 0x45, 0x42, 0x50}) == uint64_t{920});
  const std::string ppm = "P6\n37 21\n255\n", deep = "P5\n# 16-bit\n4 2\n65535\n";
  CHECK(declared_file_bytes({ppm.begin(), ppm.end()}) == uint64_t{2344});
  CHECK(declared_file_bytes({deep.begin(), deep.end()}) == uint64_t{deep.size() + 4 * 2 * 2});
  const std::string ascii = "P3\n37 21\n255\n";  // text samples: no fixed length
  CHECK_FALSE(declared_file_bytes({ascii.begin(), ascii.end()}));
  CHECK_FALSE(declared_file_bytes({0x42, 0x4d, 0x00, 0x00, 0x00, 0x00}));  // a BMP writer that left the size 0
  CHECK_FALSE(declared_file_bytes({0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a}));
  CHECK_FALSE(declared_file_bytes({}));
}

TEST_CASE("a file that is no image is told by what it holds: an LFS pointer, a web page, text, other formats", "[data]") {
  const auto about = [](const std::string& text) { return describe_non_image(std::vector<uint8_t>(text.begin(), text.end())); };
  CHECK_THAT(about("version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 12345\n"),
             Catch::StartsWith("a Git LFS pointer") && Catch::Contains("git lfs pull"));
  CHECK_THAT(about("\n  <!DOCTYPE html><html><body>403 Forbidden"), Catch::StartsWith("an HTML page"));
  CHECK_THAT(about("<HTML><head>"), Catch::StartsWith("an HTML page"));
  CHECK_THAT(about("<?xml version=\"1.0\"?><svg"), Catch::Contains("SVG"));
  CHECK_THAT(about("GIF89a\x01\x00"), Catch::StartsWith("a GIF"));
  CHECK_THAT(about(std::string("\0\0\0\x18"
                               "ftypheic",
                               12)),
             Catch::Contains("HEIC"));
  CHECK_THAT(about("%PDF-1.7"), Catch::StartsWith("a PDF"));
  CHECK_THAT(about("PK\x03\x04rest"), Catch::StartsWith("a ZIP"));
  CHECK(about("a line\nand another, longer than forty characters in all") ==
        "text, not an image: 'a line and another, longer than forty ch...'");
  CHECK(describe_non_image({0x00, 0x01, 0xfe, 0x80}) ==
        "not an image cvtrain reads (JPEG, PNG, BMP, WebP, TIFF, PNM): it starts with bytes 00 01 fe 80");
}
