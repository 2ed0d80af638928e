// png_damage names a PNG cut short or corrupted, before libpng would meet it; intact files, files
// that only lack IEND (Pillow reads those) and damaged ancillary chunks pass to the decoder.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "cvtrain/data/image_decode.h"
#include "cvtrain/data/image_views.h"
#include "cvtrain/data/png_chunks.h"
#include "image_files.h"

using namespace cvtrain;
using cvtrain::testing::encode_png;

namespace {

std::vector<uint8_t> gradient_png() {
  std::vector<uint8_t> rgb(32 * 24 * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>(i * 7 % 251);
  return encode_png(rgb, 32, 24, 2, 8);
}

// The offset of the first chunk of `type` (its length field).
size_t chunk_at(const std::vector<uint8_t>& png, const std::string& type) {
  for (size_t at = 8; at + 8 <= png.size();) {
    const uint32_t length = uint32_t{png[at]} << 24 | uint32_t{png[at + 1]} << 16 | uint32_t{png[at + 2]} << 8 | png[at + 3];
    if (std::string(reinterpret_cast<const char*>(&png[at + 4]), 4) == type) return at;
    at += 12 + length;
  }
  FAIL("no chunk " << type);
  return 0;
}

// `png` with a tEXt chunk whose CRC is wrong, before IDAT.
std::vector<uint8_t> with_bad_text_chunk(std::vector<uint8_t> png) {
  const std::vector<uint8_t> text{0, 0, 0, 3, 't', 'E', 'X', 't', 'a', 0, 'b', 0xde, 0xad, 0xbe, 0xef};
  png.insert(png.begin() + static_cast<std::ptrdiff_t>(chunk_at(png, "IDAT")), text.begin(), text.end());
  return png;
}

std::vector<uint8_t> first(const std::vector<uint8_t>& bytes, size_t n) {
  return {bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n)};
}

}  // namespace

TEST_CASE("png_damage: intact files and non-PNG bytes pass", "[data]") {
  const std::vector<uint8_t> png = gradient_png();
  CHECK_FALSE(png_damage(png));
  CHECK_FALSE(png_damage({'h', 'e', 'l', 'l', 'o'}));
  CHECK_FALSE(png_damage({}));
  std::vector<uint8_t> trailing = png;  // bytes after IEND are not read
  trailing.insert(trailing.end(), {1, 2, 3});
  CHECK_FALSE(png_damage(trailing));
  CHECK_FALSE(png_damage(first(png, chunk_at(png, "IEND"))));  // whole chunks, no IEND: the decoder decides
}

TEST_CASE("png_damage: a file cut inside a chunk is truncated, naming the chunk and what is missing", "[data]") {
  const std::vector<uint8_t> png = gradient_png();
  const size_t idat = chunk_at(png, "IDAT");
  const auto cut = png_damage(first(png, idat + 20));
  REQUIRE(cut);
  const uint32_t length = uint32_t{png[idat]} << 24 | uint32_t{png[idat + 1]} << 16 | uint32_t{png[idat + 2]} << 8 | png[idat + 3];
  CHECK(*cut == fmt::format("truncated PNG (the data ends at byte {}, inside chunk IDAT that starts at byte {} and needs {} more)",
                            idat + 20, idat, 12 + length - 20));
  const auto in_header = png_damage(first(png, idat + 5));
  REQUIRE(in_header);
  CHECK(*in_header == fmt::format("truncated PNG (the data ends at byte {} inside a chunk's header, after chunk IHDR)", idat + 5));
  CHECK_THAT(png_damage(first(png, 12)).value_or(""), Catch::StartsWith("truncated PNG") && Catch::Contains("after the signature"));
}

TEST_CASE("png_damage: a changed byte in a critical chunk fails its CRC, one in an ancillary chunk is skipped as libpng skips it", "[data]") {
  const std::vector<uint8_t> png = gradient_png();
  const size_t idat = chunk_at(png, "IDAT");
  std::vector<uint8_t> flipped = png;
  flipped[idat + 8 + 3] ^= 0x10;
  CHECK(png_damage(flipped) == fmt::format("damaged PNG (chunk IDAT at byte {} fails its CRC-32)", idat));
  std::vector<uint8_t> huge = png;  // a length beyond the specification's 2^31 - 1
  huge[idat] = 0x80;
  CHECK_THAT(png_damage(huge).value_or(""), Catch::StartsWith("damaged PNG (chunk 'IDAT'") && Catch::Contains("claims"));
  CHECK_FALSE(png_damage(with_bad_text_chunk(png)));
}

#ifdef CVTRAIN_WITH_IMGCODECS
TEST_CASE("decoding a truncated or corrupted PNG, or a PNM cut short, says which, naming the file", "[data]") {
  const std::vector<uint8_t> png = gradient_png();
  CHECK(decode_view(png, "whole.png", ImageView::exact).width == 32);
  CHECK_THROWS_WITH(decode_view(first(png, png.size() - 30), "cut.png", ImageView::exact), Catch::StartsWith("cut.png: truncated PNG"));
  std::vector<uint8_t> flipped = png;
  flipped[chunk_at(png, "IDAT") + 9] ^= 1;
  CHECK_THROWS_WITH(decode_view(flipped, "flipped.png", ImageView::exact), Catch::StartsWith("flipped.png: damaged PNG (chunk IDAT"));
  // Other formats whose header says how long they are: a file cut short is called truncated.
  std::vector<uint8_t> ppm{'P', '6', '\n', '4', ' ', '3', '\n', '2', '5', '5', '\n'};
  ppm.resize(ppm.size() + 4 * 3 * 3 / 2, 100);  // half the samples
  CHECK_THROWS_WITH(decode_view(ppm, "half.ppm", ImageView::exact),
                    Catch::Equals("half.ppm: truncated PNM (its header declares " + std::to_string(11 + 36) + " bytes, the file has 29)"));
  // An ancillary chunk with a wrong CRC: libpng skips it.
  CHECK(decode_view(with_bad_text_chunk(png), "text.png", ImageView::exact).pixels == decode_view(png, "whole.png", ImageView::exact).pixels);
}
#endif
