// render_on_device against the CPU path: the same plans give the same region, size and flip, and
// pixels that differ only by the resampling filter (measured here, in the README's figures).
#include "torch_catch.h"

#include <ATen/ATen.h>

#include <cmath>

#include "cvtrain/data/device_render.h"
#include "cvtrain/data/transforms.h"
#include "cvtrain/recipe/recipe.h"

using namespace cvtrain;

namespace {

// A photo-like 3-channel image: smooth shading with some fine texture.
Image photo(int height, int width) {
  Image image{std::vector<uint8_t>(static_cast<size_t>(height) * width * 3), height, width, 3};
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < 3; ++c) {
        const double value = 128 + 60 * std::sin(0.031 * x + 0.7 * c) * std::cos(0.023 * y) + 25 * std::sin(0.37 * x * (c + 1)) +
                             15 * std::cos(0.41 * y + x * 0.05);
        image.pixels[(static_cast<size_t>(y) * width + x) * 3 + c] = static_cast<uint8_t>(std::clamp(value, 0.0, 255.0));
      }
  return image;
}

at::Tensor as_tensor(const Image& image) {
  return at::from_blob(const_cast<uint8_t*>(image.pixels.data()), {image.height, image.width, image.channels}, at::kByte).clone();
}

struct Gap {
  double mean = 0, max = 0;
};

enum class WrongFlip { none, horizontal, vertical };

// The CPU render of sample `index` against the device render of the same plan (or of the plan
// with one flip turned the other way, to show the comparison sees it).
Gap render_gap(const Image& source, const SampleTransform& transform, size_t index, WrongFlip wrong = WrongFlip::none) {
  const Image cpu = transform_sample(source, transform, index);
  CropPlan plan = plan_sample(ImageSize{source.width, source.height}, transform, index);
  if (wrong == WrongFlip::horizontal) plan.flip = !plan.flip;
  if (wrong == WrongFlip::vertical) plan.vflip = !plan.vflip;
  at::Tensor device = at::empty({transform.image_size, transform.image_size, 3}, at::kByte);
  render_on_device(as_tensor(source), plan, transform.image_size, device);
  const at::Tensor difference = (as_tensor(cpu).to(at::kFloat) - device.to(at::kFloat)).abs();
  return Gap{difference.mean().item<double>(), difference.max().item<double>()};
}

}  // namespace

TEST_CASE("a sample rendered on the device has the CPU sample's region and flips, within the filters' difference", "[data]") {
  const Image source = photo(240, 320);
  AugmentSpec augment;
  augment.random_resized_crop = {0.08, 1.0};
  augment.hflip = FlipChance{0.5};
  augment.vflip = FlipChance{0.5};
  const SampleTransform transform{&augment, 64, 7, 2};
  REQUIRE(device_renderable(transform));
  double mean = 0, largest = 0, mirrored = 0, upside_down = 0;
  constexpr int kSamples = 40;
  for (size_t index = 0; index < kSamples; ++index) {
    const Gap gap = render_gap(source, transform, index);
    mean += gap.mean / kSamples;
    largest = std::max(largest, gap.mean);
    mirrored += render_gap(source, transform, index, WrongFlip::horizontal).mean / kSamples;
    upside_down += render_gap(source, transform, index, WrongFlip::vertical).mean / kSamples;
  }
  WARN("random_resized_crop 64 from 320x240, " << kSamples << " samples: mean |difference| " << mean << " levels (worst sample "
                                               << largest << "); with the flip wrong " << mirrored);
  // Measured 2.2 and 3.3 levels: OpenCV's plain bilinear (below a 2x shrink) against an antialiased
  // one, on a texture with detail near the pixel pitch; a wrong region or size would be tens.
  CHECK(mean < 3.0);
  CHECK(largest < 5.0);
  CHECK(mirrored > 5 * mean);  // the comparison sees a wrong flip
  CHECK(upside_down > 5 * mean);
}

TEST_CASE("the centre view rendered on the device is within a level of Pillow's", "[data]") {
  const Image source = photo(240, 320);
  const SampleTransform transform{nullptr, 96, 0, 0};
  const Gap gap = render_gap(source, transform, 0);
  WARN("centre view 96 of 320x240: mean |difference| " << gap.mean << ", largest " << gap.max);
  CHECK(gap.mean < 0.5);
  CHECK(gap.max <= 2);
}

TEST_CASE("bicubic samples rendered on the device are within a level or two of Pillow's bicubic", "[data]") {
  const Image source = photo(240, 320);
  AugmentSpec augment;
  augment.random_resized_crop = {0.08, 1.0};
  augment.interpolation = AugmentInterpolation::kBicubic;
  const SampleTransform transform{&augment, 64, 7, 2};
  double mean = 0, largest = 0;
  constexpr int kSamples = 40;
  for (size_t index = 0; index < kSamples; ++index) {
    const Gap gap = render_gap(source, transform, index);
    mean += gap.mean / kSamples;
    largest = std::max(largest, gap.mean);
  }
  SampleTransform centre{nullptr, 96, 0, 0};
  centre.eval_filter = ResizeFilter::kBicubic;
  const Gap centre_gap = render_gap(source, centre, 0);
  WARN("bicubic random_resized_crop 64 from 320x240: mean |difference| "
       << mean << " (worst sample " << largest << "); centre view 96: " << centre_gap.mean << ", largest " << centre_gap.max);
  // Both antialiased Keys cubics (a = -0.5): only Pillow's fixed point and rounding between passes
  // differ (measured 0.14, worst 0.20, centre 0.16 and 1); bilinear against bicubic is levels apart.
  CHECK(mean < 0.5);
  CHECK(largest < 0.5);
  CHECK(centre_gap.mean < 0.5);
  CHECK(centre_gap.max <= 2);
}

TEST_CASE("padding and automatic augmentation stay on the CPU path", "[data]") {
  AugmentSpec padded;
  padded.random_crop_padding = 4;
  CHECK_FALSE(device_renderable(SampleTransform{&padded, 32, 0, 0}));
  AugmentSpec jitter;
  jitter.color_jitter = 0.4;
  CHECK_FALSE(device_renderable(SampleTransform{&jitter, 32, 0, 0}));
  CHECK(device_renderable(SampleTransform{nullptr, 32, 0, 0}));
}
