// Per-sample transforms: deterministic in (seed, epoch, index), correct geometry, torchvision's boxes, the recipe's filters.
#include <catch2/catch.hpp>

#include <algorithm>
#include <tuple>

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

TEST_CASE("the evaluation view has torchvision's Resize(256) and CenterCrop(224) geometry", "[data]") {
  // 500x375 -> 341x256 (the long side truncated), crop offsets round((341-224)/2) = round(58.5) = 58
  // (half to even, as Python) and 16.
  const CropPlan landscape = plan_sample(ImageSize{500, 375}, SampleTransform{nullptr, 224, 0, 0}, 0);
  CHECK(landscape.resized_width == 341);
  CHECK(landscape.resized_height == 256);
  CHECK(landscape.keep_x == 58);
  CHECK(landscape.keep_y == 16);
  // Only the columns and rows the antialiasing filter reads for the kept pixels are decoded.
  CHECK(landscape.x > 0);
  CHECK(landscape.x + landscape.width < 500);
  CHECK(landscape.y > 0);
  CHECK(landscape.y + landscape.height < 375);
  const CropPlan portrait = plan_sample(ImageSize{333, 500}, SampleTransform{nullptr, 224, 0, 0}, 0);
  CHECK(portrait.resized_width == 256);
  CHECK(portrait.resized_height == 384);
  CHECK(portrait.keep_y == 80);
  // A flat image stays flat: the filter's weights add up to one.
  Image flat{std::vector<uint8_t>(375 * 500 * 3, 77), 375, 500, 3};
  const Image out = transform_sample(flat, SampleTransform{nullptr, 224, 0, 0}, 0);
  CHECK(std::all_of(out.pixels.begin(), out.pixels.end(), [](uint8_t v) { return v == 77; }));
}

TEST_CASE("training augmentation is a pure function of seed, epoch and index", "[data]") {
  AugmentSpec augment;
  augment.hflip = FlipChance{0.5};
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
  augment.hflip = FlipChance{0.5};
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

TEST_CASE("flips happen with the recipe's chance, and a vertical one mirrors columns", "[data]") {
  const Image input = gradient(4, 4, 1);
  const auto count_changed = [&](const AugmentSpec& augment) {
    int changed = 0;
    for (size_t index = 0; index < 400; ++index)
      changed += transform_sample(input, SampleTransform{&augment, 4, 0, 0}, index).pixels != input.pixels;
    return changed;
  };
  AugmentSpec rare;
  rare.hflip = FlipChance{0.2};
  CHECK(count_changed(rare) > 50);  // 80 expected
  CHECK(count_changed(rare) < 110);
  AugmentSpec always;
  always.vflip = FlipChance{1.0};
  CHECK(count_changed(always) == 400);
  const Image out = transform_sample(input, SampleTransform{&always, 4, 0, 0}, 0);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) REQUIRE(out.pixels[y * 4 + x] == input.pixels[(3 - y) * 4 + x]);
  // With vflip on, a left-right flip is still drawn first: the same samples are mirrored as without it.
  AugmentSpec both;
  both.hflip = FlipChance{0.5};
  both.vflip = FlipChance{0.5};
  AugmentSpec left_right;
  left_right.hflip = FlipChance{0.5};
  for (size_t index = 0; index < 50; ++index)
    CHECK(plan_sample(ImageSize{4, 4}, SampleTransform{&both, 4, 0, 0}, index).flip ==
          plan_sample(ImageSize{4, 4}, SampleTransform{&left_right, 4, 0, 0}, index).flip);
}

TEST_CASE("random_resized_crop_ratio bounds the boxes' aspect, and a box that never fits falls back as torchvision's", "[data]") {
  AugmentSpec augment;
  augment.random_resized_crop = {0.3, 1.0};
  augment.random_resized_crop_ratio = {0.5, 2.0};
  double widest = 1, narrowest = 1;
  for (size_t index = 0; index < 2000; ++index) {
    const CropPlan plan = plan_sample(ImageSize{400, 400}, SampleTransform{&augment, 32, 0, 0}, index);
    const double aspect = static_cast<double>(plan.width) / plan.height;
    widest = std::max(widest, aspect);
    narrowest = std::min(narrowest, aspect);
    REQUIRE(plan.x + plan.width <= 400);
    REQUIRE(plan.y + plan.height <= 400);
  }
  // Near both ends of [0.5, 2] (up to the rounding of w and h), beyond the default [3/4, 4/3].
  CHECK(widest > 1.8);
  CHECK(widest < 2.05);
  CHECK(narrowest < 0.55);
  CHECK(narrowest > 0.48);
  // A 1000x60 strip: every try at 90 % of its area is taller than 60, so torchvision keeps the whole
  // height and the widest ratio in range, centred (not the central square).
  AugmentSpec strip;
  strip.random_resized_crop = {0.9, 1.0};
  const CropPlan fallback = plan_sample(ImageSize{1000, 60}, SampleTransform{&strip, 32, 0, 0}, 3);
  CHECK(fallback.width == 80);  // round(60 * 4/3)
  CHECK(fallback.height == 60);
  CHECK(fallback.x == 460);
  CHECK(fallback.y == 0);
  // A tall one keeps its width, cut to the narrowest ratio.
  const CropPlan tall = plan_sample(ImageSize{60, 1000}, SampleTransform{&strip, 32, 0, 0}, 3);
  CHECK(tall.width == 60);
  CHECK(tall.height == 80);
  CHECK(tall.y == 460);
}

TEST_CASE("augment.interpolation random draws either filter, last, so boxes and flips stay those of bilinear", "[data]") {
  AugmentSpec bilinear;
  bilinear.random_resized_crop = {0.08, 1.0};
  bilinear.hflip = FlipChance{0.5};
  AugmentSpec random = bilinear;
  random.interpolation = AugmentInterpolation::kRandom;
  AugmentSpec bicubic = bilinear;
  bicubic.interpolation = AugmentInterpolation::kBicubic;
  int drawn_bicubic = 0;
  for (size_t index = 0; index < 400; ++index) {
    const ImageSize source{320, 240};
    const CropPlan a = plan_sample(source, SampleTransform{&bilinear, 64, 3, 1}, index);
    const CropPlan b = plan_sample(source, SampleTransform{&random, 64, 3, 1}, index);
    REQUIRE(std::tie(a.x, a.y, a.width, a.height, a.flip) == std::tie(b.x, b.y, b.width, b.height, b.flip));
    CHECK(a.filter == ResizeFilter::kBilinear);
    CHECK(plan_sample(source, SampleTransform{&bicubic, 64, 3, 1}, index).filter == ResizeFilter::kBicubic);
    drawn_bicubic += b.filter == ResizeFilter::kBicubic;
  }
  CHECK(drawn_bicubic > 160);  // 200 expected
  CHECK(drawn_bicubic < 240);
}

TEST_CASE("bicubic keeps a flat image flat, reads a wider centre region, and differs from bilinear on detail", "[data]") {
  Image flat{std::vector<uint8_t>(300 * 400 * 3, 200), 300, 400, 3};
  AugmentSpec bicubic;
  bicubic.random_resized_crop = {0.08, 1.0};
  bicubic.interpolation = AugmentInterpolation::kBicubic;
  for (size_t index = 0; index < 20; ++index) {
    const Image out = transform_sample(flat, SampleTransform{&bicubic, 48, 0, 0}, index);
    REQUIRE(std::all_of(out.pixels.begin(), out.pixels.end(), [](uint8_t v) { return v == 200; }));
  }
  SampleTransform evaluation{nullptr, 224, 0, 0};
  const CropPlan linear = plan_sample(ImageSize{500, 375}, evaluation, 0);
  evaluation.eval_filter = ResizeFilter::kBicubic;
  const CropPlan cubic = plan_sample(ImageSize{500, 375}, evaluation, 0);
  CHECK(cubic.filter == ResizeFilter::kBicubic);
  CHECK(cubic.x < linear.x);  // support 2 against 1, widened by the shrink
  CHECK(cubic.width > linear.width);
  CHECK(std::tie(cubic.resized_width, cubic.keep_x) == std::tie(linear.resized_width, linear.keep_x));
  const Image detail = gradient(375, 500, 3);
  CHECK(transform_sample(detail, evaluation, 0).pixels != transform_sample(detail, SampleTransform{nullptr, 224, 0, 0}, 0).pixels);
  AugmentSpec bilinear = bicubic;
  bilinear.interpolation = AugmentInterpolation::kBilinear;
  CHECK(transform_sample(detail, SampleTransform{&bicubic, 48, 0, 0}, 5).pixels !=
        transform_sample(detail, SampleTransform{&bilinear, 48, 0, 0}, 5).pixels);
}

TEST_CASE("resize_filter takes the fixed filters and refuses random, which is drawn per sample", "[data]") {
  CHECK(resize_filter(AugmentInterpolation::kBilinear) == ResizeFilter::kBilinear);
  CHECK(resize_filter(AugmentInterpolation::kBicubic) == ResizeFilter::kBicubic);
  CHECK_THROWS(resize_filter(AugmentInterpolation::kRandom));
}
