// Per-sample transforms: deterministic in (seed, epoch, index), correct geometry.
#include <catch2/catch.hpp>

#include "cvtrain/data/transforms.h"
#include "cvtrain/recipe/recipe.h"

using namespace cvtrain;

namespace {

Image gradient(int h, int w, int c) {
  Image image{std::vector<uint8_t>(static_cast<size_t>(h) * w * c), h, w, c};
  for (size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = static_cast<uint8_t>(i * 7);
  return image;
}

}  // namespace

TEST_CASE("evaluation transform resizes the short side and crops the centre", "[data]") {
  const Image out = transform_sample(gradient(375, 500, 3), SampleTransform{nullptr, 224, 0, 0}, 0);
  CHECK(out.height == 224);
  CHECK(out.width == 224);
  CHECK(out.channels == 3);
  const Image same = transform_sample(gradient(28, 28, 1), SampleTransform{nullptr, 28, 0, 0}, 0);
  CHECK(same.pixels == gradient(28, 28, 1).pixels);
}

TEST_CASE("training augmentation is a pure function of seed, epoch and index", "[data]") {
  AugmentSpec augment;
  augment.hflip = true;
  augment.random_crop_padding = 4;
  augment.random_resized_crop = {0.2, 1.0};
  const Image input = gradient(60, 80, 3);
  const SampleTransform t{&augment, 32, 5, 2};
  const Image a = transform_sample(input, t, 17);
  CHECK(a.height == 32);
  CHECK(a.width == 32);
  CHECK(transform_sample(input, t, 17).pixels == a.pixels);
  CHECK(transform_sample(input, t, 18).pixels != a.pixels);
  CHECK(transform_sample(input, SampleTransform{&augment, 32, 5, 3}, 17).pixels != a.pixels);
}

TEST_CASE("horizontal flip mirrors rows and happens for about half the samples", "[data]") {
  AugmentSpec augment;
  augment.hflip = true;
  const Image input = gradient(4, 4, 1);
  int flipped = 0;
  for (size_t index = 0; index < 200; ++index) {
    const Image out = transform_sample(input, SampleTransform{&augment, 4, 0, 0}, index);
    if (out.pixels == input.pixels) continue;
    ++flipped;
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 4; ++x) REQUIRE(out.pixels[y * 4 + x] == input.pixels[y * 4 + (3 - x)]);
  }
  CHECK(flipped > 70);
  CHECK(flipped < 130);
}
