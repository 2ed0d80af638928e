// mmseg's RandomResize, RandomCrop, RandomFlip and PhotoMetricDistortion in one pass: the crop is
// chosen on the nearest-neighbour mask before any image pixel is resized, then only the kept part
// of the image is resampled, mirrored and distorted, and the rest padded.
#include "cvtrain/data/joint_transforms.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <opencv2/imgproc.hpp>
#include <vector>

#include "cvtrain/core/error.h"
#include "cvtrain/core/rng.h"
#include "cvtrain/data/resample.h"

namespace cvtrain {
namespace {

constexpr int kCropRedraws = 10;  // mmseg's RandomCrop tries ten more crops for cat_max_ratio

// Pillow's NEAREST: output pixel i reads the source pixel under its centre.
std::vector<int> nearest_sources(int source, int resized, int from, int count) {
  std::vector<int> at(static_cast<size_t>(count));
  const double scale = static_cast<double>(source) / resized;
  for (int i = 0; i < count; ++i) at[i] = std::min(source - 1, static_cast<int>((from + i + 0.5) * scale));
  return at;
}

// The `crop` of `mask` resized to `resized`, by nearest neighbour.
std::vector<uint8_t> resized_mask_region(const LabelMask& mask, ImageSize resized, const PixelRect& crop) {
  const std::vector<int> xs = nearest_sources(mask.width, resized.width, crop.x, crop.width);
  const std::vector<int> ys = nearest_sources(mask.height, resized.height, crop.y, crop.height);
  std::vector<uint8_t> out(static_cast<size_t>(crop.width) * crop.height);
  for (int y = 0; y < crop.height; ++y) {
    const uint8_t* row = mask.ids.data() + static_cast<size_t>(ys[y]) * mask.width;
    for (int x = 0; x < crop.width; ++x) out[static_cast<size_t>(y) * crop.width + x] = row[xs[x]];
  }
  return out;
}

PixelRect draw_crop(ImageSize resized, int crop_height, int crop_width, SplitMix64& rng) {
  const int margin_y = std::max(resized.height - crop_height, 0), margin_x = std::max(resized.width - crop_width, 0);
  PixelRect crop;
  crop.y = static_cast<int>(rng.below(static_cast<uint64_t>(margin_y) + 1));
  crop.x = static_cast<int>(rng.below(static_cast<uint64_t>(margin_x) + 1));
  crop.height = std::min(crop_height, resized.height);
  crop.width = std::min(crop_width, resized.width);
  return crop;
}

// mmseg's test: more than one class among the labelled pixels, and none holding cat_max_ratio of them.
bool mixed_enough(const std::vector<uint8_t>& ids, int ignore_index, double cat_max_ratio) {
  std::array<uint64_t, 256> counts{};
  for (uint8_t id : ids) ++counts[id];
  counts[static_cast<size_t>(ignore_index) & 255] = 0;
  uint64_t total = 0, largest = 0, classes = 0;
  for (uint64_t c : counts) total += c, largest = std::max(largest, c), classes += c > 0;
  return classes > 1 && static_cast<double>(largest) / static_cast<double>(total) < cat_max_ratio;
}

PhotometricPlan draw_photometric(SplitMix64& rng) {
  PhotometricPlan p;
  p.brightness = rng.below(2) == 1;
  p.brightness_delta = static_cast<float>(rng.uniform(-32.0, 32.0));
  p.contrast_first = rng.below(2) == 1;  // mmseg's mode 1
  p.contrast = rng.below(2) == 1;
  p.contrast_alpha = static_cast<float>(rng.uniform(0.5, 1.5));
  p.saturation = rng.below(2) == 1;
  p.saturation_alpha = static_cast<float>(rng.uniform(0.5, 1.5));
  p.hue = rng.below(2) == 1;
  p.hue_delta = static_cast<int>(rng.below(36)) - 18;
  return p;
}

// mmseg's convert: float32 arithmetic, clipped, truncated back to 8 bits.
uint8_t converted(uint8_t v, float alpha, float beta) {
  return static_cast<uint8_t>(std::clamp(static_cast<float>(v) * alpha + beta, 0.0f, 255.0f));
}

void convert_all(uint8_t* p, size_t n, float alpha, float beta) {
  for (size_t i = 0; i < n; ++i) p[i] = converted(p[i], alpha, beta);
}

// One HSV round trip (OpenCV's 8-bit HSV, as mmcv's bgr2hsv; RGB in, so the channels come out the same).
template <typename Change>
void in_hsv(uint8_t* rgb, int width, int height, Change change) {
  cv::Mat pixels(height, width, CV_8UC3, rgb), hsv;
  cv::cvtColor(pixels, hsv, cv::COLOR_RGB2HSV);
  for (int y = 0; y < height; ++y) {
    uint8_t* row = hsv.ptr<uint8_t>(y);
    for (int x = 0; x < width; ++x) change(row + 3 * x);
  }
  cv::cvtColor(hsv, pixels, cv::COLOR_HSV2RGB);
}

// The resized image's `crop`, mirrored when `flip` (crop.width x crop.height x 3).
std::vector<uint8_t> image_crop(const Image& image, ImageSize resized, const PixelRect& crop, bool flip) {
  std::vector<uint8_t> kept(static_cast<size_t>(crop.width) * crop.height * 3);
  const ResampleAxis x = resample_axis(ResizeFilter::kBilinear, image.width, resized.width, crop.x, crop.width);
  const ResampleAxis y = resample_axis(ResizeFilter::kBilinear, image.height, resized.height, crop.y, crop.height);
  resample(image, 0, 0, x, y, kept.data());
  if (flip)
    for (int row = 0; row < crop.height; ++row) {
      uint8_t* p = kept.data() + static_cast<size_t>(row) * crop.width * 3;
      for (int left = 0, right = crop.width - 1; left < right; ++left, --right)
        std::swap_ranges(p + left * 3, p + left * 3 + 3, p + right * 3);
    }
  return kept;
}

// `rows` rows of `from_width` elements copied into the top-left of a buffer `to_width` wide.
void paste(const uint8_t* from, int from_width, int rows, uint8_t* to, int to_width) {
  for (int row = 0; row < rows; ++row)
    std::copy_n(from + static_cast<size_t>(row) * from_width, from_width, to + static_cast<size_t>(row) * to_width);
}

void mirror_rows(std::vector<uint8_t>& ids, int width) {
  for (size_t row = 0; row < ids.size(); row += static_cast<size_t>(width)) std::reverse(ids.begin() + row, ids.begin() + row + width);
}

void check_inputs(const JointAugment& augment, const Image& image, const LabelMask& mask) {
  if (augment.crop_height <= 0 || augment.crop_width <= 0)
    throw Error(fmt::format("segmentation crop size {}x{}: both sides must be positive", augment.crop_height, augment.crop_width));
  if (image.channels != 3) throw Error(fmt::format("segmentation images are RGB here, not {} channels", image.channels));
  if (mask.width != image.width || mask.height != image.height)
    throw Error(fmt::format("the mask is {}x{} and its image {}x{}", mask.width, mask.height, image.width, image.height));
}

}  // namespace

ImageSize rescaled_size(ImageSize source, int scale_long, int scale_short, double ratio) {
  const double max_long = static_cast<int>(scale_long * ratio), max_short = static_cast<int>(scale_short * ratio);
  const double factor = std::min(max_long / std::max(source.width, source.height), max_short / std::min(source.width, source.height));
  return {std::max(1, static_cast<int>(source.width * factor + 0.5)), std::max(1, static_cast<int>(source.height * factor + 0.5))};
}

void apply_photometric(const PhotometricPlan& plan, uint8_t* rgb, int width, int height) {
  const size_t n = static_cast<size_t>(width) * height * 3;
  if (plan.brightness) convert_all(rgb, n, 1.0f, plan.brightness_delta);
  if (plan.contrast && plan.contrast_first) convert_all(rgb, n, plan.contrast_alpha, 0.0f);
  if (plan.saturation) in_hsv(rgb, width, height, [&](uint8_t* hsv) { hsv[1] = converted(hsv[1], plan.saturation_alpha, 0.0f); });
  if (plan.hue)
    in_hsv(rgb, width, height, [&](uint8_t* hsv) { hsv[0] = static_cast<uint8_t>(((hsv[0] + plan.hue_delta) % 180 + 180) % 180); });
  if (plan.contrast && !plan.contrast_first) convert_all(rgb, n, plan.contrast_alpha, 0.0f);
}

AugmentedPair augment_pair(const JointAugment& augment, const Image& image, const LabelMask& mask, uint64_t key) {
  check_inputs(augment, image, mask);
  SplitMix64 rng(key);
  AugmentedPair out;
  JointPlan& plan = out.plan;
  const double ratio = rng.uniform(augment.ratio_min, augment.ratio_max);
  plan.resized = augment.scale_long > 0 ? rescaled_size({image.width, image.height}, augment.scale_long, augment.scale_short, ratio)
                                        : ImageSize{image.width, image.height};
  plan.crop = draw_crop(plan.resized, augment.crop_height, augment.crop_width, rng);
  std::vector<uint8_t> ids = resized_mask_region(mask, plan.resized, plan.crop);
  if (augment.cat_max_ratio < 1.0)
    for (int redraw = 0; redraw < kCropRedraws && !mixed_enough(ids, augment.ignore_index, augment.cat_max_ratio); ++redraw) {
      plan.crop = draw_crop(plan.resized, augment.crop_height, augment.crop_width, rng);
      ids = resized_mask_region(mask, plan.resized, plan.crop);
      ++plan.crop_draws;
    }
  plan.flip = rng.uniform() < augment.hflip;
  if (augment.photometric) plan.photometric = draw_photometric(rng);

  std::vector<uint8_t> pixels = image_crop(image, plan.resized, plan.crop, plan.flip);
  if (augment.photometric) apply_photometric(plan.photometric, pixels.data(), plan.crop.width, plan.crop.height);
  if (plan.flip) mirror_rows(ids, plan.crop.width);

  const int h = augment.crop_height, w = augment.crop_width;  // padded to the crop size at the bottom and right
  out.image = Image{std::vector<uint8_t>(static_cast<size_t>(h) * w * 3), h, w, 3};
  for (size_t i = 0; i < out.image.pixels.size(); i += 3) std::copy_n(augment.pad_colour.data(), 3, out.image.pixels.data() + i);
  out.mask = LabelMask{std::vector<uint8_t>(static_cast<size_t>(h) * w, static_cast<uint8_t>(augment.ignore_index)), w, h};
  paste(pixels.data(), plan.crop.width * 3, plan.crop.height, out.image.pixels.data(), w * 3);
  paste(ids.data(), plan.crop.width, plan.crop.height, out.mask.ids.data(), w);
  return out;
}

}  // namespace cvtrain
