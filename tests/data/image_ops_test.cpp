// Pillow's pixel ops: the identities and fixed points each must keep, on small known images.
// (Pixel-for-pixel equality with Pillow itself is tests/parity/check_auto_augment.py.)
#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>
#include <vector>

#include "cvtrain/data/image_ops.h"

using namespace cvtrain;

namespace {

std::vector<uint8_t> pattern(int w, int h, int c) {
  std::vector<uint8_t> p(static_cast<size_t>(w) * h * c);
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(40 + (i * 37 + i / 7) % 150);
  return p;
}

PixelView view(std::vector<uint8_t>& p, int w, int h, int c) { return PixelView{p.data(), w, h, c}; }

}  // namespace

TEST_CASE("look-up-table ops: invert, solarize, posterize and solarize-add", "[augment]") {
  const std::vector<uint8_t> original = pattern(9, 7, 3);
  std::vector<uint8_t> p = original;
  invert(view(p, 9, 7, 3));
  CHECK(p[0] == 255 - original[0]);
  invert(view(p, 9, 7, 3));
  CHECK(p == original);
  solarize(view(p, 9, 7, 3), 0);  // every value at or above 0 is inverted
  for (size_t i = 0; i < p.size(); ++i) REQUIRE(p[i] == 255 - original[i]);
  p = original;
  solarize(view(p, 9, 7, 3), 256);  // none is
  CHECK(p == original);
  posterize(view(p, 9, 7, 3), 2);
  for (size_t i = 0; i < p.size(); ++i) REQUIRE(p[i] == (original[i] & 0xC0));
  p = original;
  solarize_add(view(p, 9, 7, 3), 100, 128);
  for (size_t i = 0; i < p.size(); ++i) REQUIRE(p[i] == (original[i] < 128 ? std::min(255, original[i] + 100) : original[i]));
}

TEST_CASE("auto-contrast stretches each channel to 0..255 and equalize spreads two levels apart", "[augment]") {
  std::vector<uint8_t> p{50, 10, 0, 100, 20, 0, 150, 30, 0, 200, 40, 0};  // 4 pixels RGB; blue is flat
  auto_contrast(view(p, 4, 1, 3));
  CHECK(p == std::vector<uint8_t>{0, 0, 0, 85, 85, 0, 170, 170, 0, 255, 255, 0});
  std::vector<uint8_t> two(100, 10);
  std::fill(two.begin() + 50, two.end(), 20);
  equalize(view(two, 10, 10, 1));
  // step = (100 - 50) // 255 = 0: Pillow leaves an image this small alone
  CHECK(two[0] == 10);
  std::vector<uint8_t> big(512 * 512, 10);
  std::fill(big.begin() + big.size() / 2, big.end(), 20);
  equalize(view(big, 512, 512, 1));
  CHECK(big.front() == 0);
  CHECK(big.back() == 255);  // step 514: (257 + 131072) // 514
}

TEST_CASE("enhance factors: 1 keeps the image, 0 gives the degenerate one", "[augment]") {
  const std::vector<uint8_t> original = pattern(6, 5, 3);
  std::vector<uint8_t> p = original;
  enhance_contrast(view(p, 6, 5, 3), 1.0);
  enhance_color(view(p, 6, 5, 3), 1.0);
  enhance_sharpness(view(p, 6, 5, 3), 1.0);
  CHECK(p == original);
  enhance_brightness(view(p, 6, 5, 3), 0.0);
  CHECK(std::all_of(p.begin(), p.end(), [](uint8_t v) { return v == 0; }));
  p = original;
  enhance_color(view(p, 6, 5, 3), 0.0);  // grayscale: the three channels equal
  for (size_t i = 0; i < p.size(); i += 3) REQUIRE((p[i] == p[i + 1] && p[i + 1] == p[i + 2]));
  p = original;
  enhance_brightness(view(p, 6, 5, 3), 2.0);  // extrapolation clips at 255
  for (size_t i = 0; i < p.size(); ++i) REQUIRE(p[i] == std::min(255, 2 * original[i]));
}

TEST_CASE("affine sampling: the identity keeps pixels, a whole-pixel shift moves them and fills", "[augment]") {
  const std::vector<uint8_t> original = pattern(8, 6, 3);
  const uint8_t fill[3] = {1, 2, 3};
  for (Resample r : {Resample::kBilinear, Resample::kBicubic}) {
    std::vector<uint8_t> p = original;
    const double identity[6] = {1, 0, 0, 0, 1, 0};
    affine_transform(view(p, 8, 6, 3), identity, r, fill);
    CHECK(p == original);
    const double shift[6] = {1, 0, 2, 0, 1, 0};  // output x samples input x + 2: the image moves left
    affine_transform(view(p, 8, 6, 3), shift, r, fill);
    for (int y = 0; y < 6; ++y)
      for (int x = 0; x < 8; ++x)
        for (int c = 0; c < 3; ++c) {
          const size_t at = (static_cast<size_t>(y) * 8 + x) * 3 + c;
          REQUIRE(p[at] == (x < 6 ? original[at + 6] : fill[c]));
        }
    p = original;
    rotate(view(p, 8, 6, 3), 0.0, r, fill);
    CHECK(p == original);
  }
}

TEST_CASE("Gaussian blur keeps a flat image flat and smooths a step", "[augment]") {
  std::vector<uint8_t> flat(20 * 20 * 3, 77);
  gaussian_blur(view(flat, 20, 20, 3), 1.5);
  CHECK(std::all_of(flat.begin(), flat.end(), [](uint8_t v) { return v == 77; }));
  std::vector<uint8_t> step(40, 0);
  std::fill(step.begin() + 20, step.end(), 200);
  gaussian_blur(view(step, 40, 1, 1), 2.0);
  CHECK(step[0] == 0);
  CHECK(step[39] == 200);
  CHECK(step[19] > 40);
  CHECK(step[20] < 160);
  CHECK(std::is_sorted(step.begin(), step.end()));
}

TEST_CASE("the vector bilinear sampler gives the portable one's bytes under rotations, shears and shifts", "[augment]") {
  const uint8_t fill[3] = {128, 7, 250};
  int differing = 0, compared = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int w = 17 + trial * 5 % 90, h = 11 + trial * 7 % 80;
    const double angle = 0.05 * trial - 1.5, shear = 0.01 * (trial % 13) - 0.06;
    const double m[6] = {std::cos(angle),  std::sin(angle) + shear, 0.37 * trial - 9.0,
                         -std::sin(angle), std::cos(angle),         0.11 * trial - 3.0};
    std::vector<uint8_t> vector = pattern(w, h, 3), portable = vector;
    const std::vector<uint8_t> before = vector;
    affine_transform(view(vector, w, h, 3), m, Resample::kBilinear, fill, true);
    affine_transform(view(portable, w, h, 3), m, Resample::kBilinear, fill, false);
    INFO("trial " << trial << ": " << w << "x" << h);
    REQUIRE(vector == portable);
    differing += vector != before;
    ++compared;
  }
  CHECK(differing == compared);  // every transform moved pixels: the samplers were exercised
}
