// perceptual_hash: one picture re-encoded, resized or made gray hashes within kLookAlikeBits;
// different pictures far apart; a flat picture has no hash.
#include <catch2/catch.hpp>

#include "cvtrain/data/image_decode.h"
#include "cvtrain/data/image_views.h"
#include "cvtrain/data/perceptual_hash.h"
#include "image_files.h"

using namespace cvtrain;
using cvtrain::testing::encode_jpeg_pixels;
using cvtrain::testing::scene_rgb;

namespace {

Image scene(int w, int h, int number) { return Image{scene_rgb(w, h, number), h, w, 3}; }

uint64_t hash_of(const Image& image) {
  const std::optional<uint64_t> hash = perceptual_hash(image);
  REQUIRE(hash);
  return *hash;
}

Image jpeg_round_trip(const Image& image, int quality) {
  return decode_view(encode_jpeg_pixels(image.pixels, image.width, image.height, TJPF_RGB, quality), "q.jpg", ImageView::exact);
}

Image gray(const Image& image) {
  Image out{std::vector<uint8_t>(image.pixels.size() / 3), image.height, image.width, 1};
  for (size_t i = 0; i < out.pixels.size(); ++i)
    out.pixels[i] = static_cast<uint8_t>(0.299 * image.pixels[3 * i] + 0.587 * image.pixels[3 * i + 1] + 0.114 * image.pixels[3 * i + 2]);
  return out;
}

}  // namespace

TEST_CASE("perceptual_hash: one picture re-encoded, resized or made gray hashes alike", "[data]") {
  const Image original = scene(320, 240, 4);
  const uint64_t hash = hash_of(original);
  CHECK(hash_distance(hash, hash_of(jpeg_round_trip(original, 40))) <= kLookAlikeBits);
  CHECK(hash_distance(hash, hash_of(scene(224, 168, 4))) <= kLookAlikeBits);
  CHECK(hash_distance(hash, hash_of(jpeg_round_trip(scene(160, 120, 4), 70))) <= kLookAlikeBits);
  CHECK(hash_distance(hash, hash_of(gray(original))) <= kLookAlikeBits);
  CHECK(hash_distance(hash, hash_of(scene(20, 15, 4))) <= kLookAlikeBits);  // even a 20 x 15 thumbnail
  // Half the 64 bits are set (the median splits them).
  CHECK(__builtin_popcountll(hash) == 32);
}

TEST_CASE("perceptual_hash: different pictures are far apart, and flat ones have no hash", "[data]") {
  std::vector<uint64_t> hashes;
  for (int number = 0; number < 12; ++number) hashes.push_back(hash_of(scene(128, 96, number)));
  for (size_t i = 0; i < hashes.size(); ++i)
    for (size_t j = i + 1; j < hashes.size(); ++j) {
      INFO("scenes " << i << " and " << j);
      CHECK(hash_distance(hashes[i], hashes[j]) > 3 * kLookAlikeBits);
    }
  CHECK_FALSE(perceptual_hash(Image{std::vector<uint8_t>(64 * 48 * 3, 90), 48, 64, 3}));
  CHECK_FALSE(perceptual_hash(Image{}));
  Image faint(Image{std::vector<uint8_t>(64 * 48, 90), 48, 64, 1});  // one gray level of difference on one row
  for (int x = 0; x < 64; ++x) faint.pixels[static_cast<size_t>(x)] = 91;
  CHECK_FALSE(perceptual_hash(faint));
  CHECK(hash_distance(0, ~uint64_t{0}) == 64);
}
