// Augmentation through OpenCV imgproc. Random decisions are drawn from one SplitMix64 stream per
// sample in a fixed order (resized crop, pad-crop offsets, flip) mirrored by reference_train.py;
// the automatic augmentation draws from a second stream of its own, so turning it on changes no crop.
#include "cvtrain/data/transforms.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>

#include "cvtrain/core/error.h"
#include "cvtrain/core/rng.h"
#include "cvtrain/data/auto_augment.h"
#include "cvtrain/data/resample.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {
namespace {

cv::Mat as_mat(const Image& image) {
  return cv::Mat(image.height, image.width, CV_8UC(image.channels), const_cast<uint8_t*>(image.pixels.data()));
}

// Shrinking by 2x or more needs area averaging against aliasing; after a DCT-scaled JPEG decode
// the remaining factor is small and bilinear is as good and several times faster.
void resize_into(const cv::Mat& src, cv::Mat& dst) {
  if (src.size() == dst.size()) {
    src.copyTo(dst);
    return;
  }
  const bool big_shrink = src.cols >= 2 * dst.cols && src.rows >= 2 * dst.rows;
  cv::resize(src, dst, dst.size(), 0, 0, big_shrink ? cv::INTER_AREA : cv::INTER_LINEAR);
}

// Evaluation (and non-RRC training) view, as torchvision's Resize(floor(size / crop_fraction)) (timm's
// scale size for its crop_pct) followed by CenterCrop(size): the shorter side resized to that length
// (the longer one truncated, as torchvision computes it), the centered square kept (offsets rounded half to even, as Python's
// round()). The region is the part of the source Pillow's filter (plan.filter) reads for the kept pixels. An
// image already at the target size is kept whole.
void center_region(ImageSize src, int size, double crop_fraction, CropPlan& plan) {
  plan.width = src.width;
  plan.height = src.height;
  if (src.width == size && src.height == size) return;
  const int short_side = static_cast<int>(std::floor(size / crop_fraction));
  const int longer = std::max(src.width, src.height), shorter = std::min(src.width, src.height);
  const int long_side = static_cast<int>(static_cast<double>(short_side) * longer / shorter);
  plan.resized_width = src.width <= src.height ? short_side : long_side;
  plan.resized_height = src.width <= src.height ? long_side : short_side;
  plan.keep_x = static_cast<int>(std::nearbyint((plan.resized_width - size) / 2.0));
  plan.keep_y = static_cast<int>(std::nearbyint((plan.resized_height - size) / 2.0));
  const ResampleAxis x = resample_axis(plan.filter, src.width, plan.resized_width, plan.keep_x, size);
  const ResampleAxis y = resample_axis(plan.filter, src.height, plan.resized_height, plan.keep_y, size);
  plan.x = x.source_begin();
  plan.y = y.source_begin();
  plan.width = x.source_end() - plan.x;
  plan.height = y.source_end() - plan.y;
}

// The center view from a decoded window; at a reduced DCT scale the filter is laid out on the
// scaled source (close to, no longer exactly, what Pillow computes from the full-size decode).
void render_center_view(const ImageWindow& decoded, const CropPlan& plan, int size, uint8_t* out) {
  const ResampleAxis x = resample_axis(plan.filter, decoded.full.width, plan.resized_width, plan.keep_x, size);
  const ResampleAxis y = resample_axis(plan.filter, decoded.full.height, plan.resized_height, plan.keep_y, size);
  resample(decoded.image, decoded.x, decoded.y, x, y, out);
}

// torchvision's RandomResizedCrop.get_params (and timm's): 10 tries at a random area and a
// log-uniform aspect ratio in `ratio`, then the whole image cut to the nearest ratio in range,
// centred, as a fallback.
void random_resized_region(ImageSize src, const std::vector<double>& scale, const std::vector<double>& ratio, SplitMix64& rng,
                           CropPlan& plan) {
  const double area = static_cast<double>(src.width) * src.height;
  const double log_lo = std::log(ratio[0]), log_hi = std::log(ratio[1]);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * rng.uniform(scale[0], scale[1]);
    const double aspect = std::exp(rng.uniform(log_lo, log_hi));
    const int w = static_cast<int>(std::lround(std::sqrt(target * aspect)));
    const int h = static_cast<int>(std::lround(std::sqrt(target / aspect)));
    if (w > 0 && h > 0 && w <= src.width && h <= src.height) {
      plan.x = static_cast<int>(rng.below(static_cast<uint64_t>(src.width - w + 1)));
      plan.y = static_cast<int>(rng.below(static_cast<uint64_t>(src.height - h + 1)));
      plan.width = w;
      plan.height = h;
      return;
    }
  }
  const double in_ratio = static_cast<double>(src.width) / src.height;
  int w = src.width, h = src.height;
  if (in_ratio < ratio[0]) h = static_cast<int>(std::lround(w / ratio[0]));
  if (in_ratio > ratio[1]) w = static_cast<int>(std::lround(h * ratio[1]));
  plan.x = (src.width - w) / 2;
  plan.y = (src.height - h) / 2;
  plan.width = std::max(w, 1);
  plan.height = std::max(h, 1);
}

// The sample's resize filter; `random` (timm's default) draws bilinear or bicubic, half each, last
// in the stream, so that it moves no other draw.
ResizeFilter draw_filter(AugmentInterpolation interpolation, SplitMix64& rng) {
  if (interpolation != AugmentInterpolation::kRandom) return resize_filter(interpolation);
  return rng.uniform() < 0.5 ? ResizeFilter::kBicubic : ResizeFilter::kBilinear;
}

// The crop resized as torchvision's resized_crop does to a PIL image: the region cut out, then
// Image.resize, so the filter stops at the region's edges (Pillow's bicubic; OpenCV's bilinear,
// several times faster than Pillow's and what earlier runs trained on).
void resize_crop(const Image& image, const cv::Rect& region, ResizeFilter filter, cv::Mat& out) {
  const int side = out.cols;
  if (filter == ResizeFilter::kBilinear || (region.width == side && region.height == side)) return resize_into(as_mat(image)(region), out);
  const ResampleAxis x = resample_axis(filter, region.width, side, 0, side);
  const ResampleAxis y = resample_axis(filter, region.height, side, 0, side);
  resample(image, -region.x, -region.y, x, y, out.data);  // the axes count from the region's corner
}

// The plan's region in the coordinates of the decoded window (scaled, offset by its origin).
cv::Rect window_region(const CropPlan& plan, ImageSize source, const ImageWindow& decoded) {
  const double fx = static_cast<double>(decoded.full.width) / source.width;
  const double fy = static_cast<double>(decoded.full.height) / source.height;
  const Image& image = decoded.image;
  const int x = std::clamp(static_cast<int>(std::lround(plan.x * fx)) - decoded.x, 0, image.width - 1);
  const int y = std::clamp(static_cast<int>(std::lround(plan.y * fy)) - decoded.y, 0, image.height - 1);
  const int w = std::clamp(static_cast<int>(std::lround(plan.width * fx)), 1, image.width - x);
  const int h = std::clamp(static_cast<int>(std::lround(plan.height * fy)), 1, image.height - y);
  return cv::Rect(x, y, w, h);
}

// Shifts the image by (padding - dx, padding - dy), filling with zeros: the same pixels as
// zero-padding by `padding` and cropping back at (dx, dy).
void pad_and_crop(cv::Mat& image, int padding, int dx, int dy) {
  cv::Mat shifted(image.size(), image.type(), cv::Scalar::all(0));
  const int sx = padding - dx, sy = padding - dy;
  const cv::Rect from(std::max(0, -sx), std::max(0, -sy), image.cols - std::abs(sx), image.rows - std::abs(sy));
  const cv::Rect to(std::max(0, sx), std::max(0, sy), from.width, from.height);
  if (from.width > 0 && from.height > 0) image(from).copyTo(shifted(to));
  shifted.copyTo(image);
}

// augment.auto_augment's ops, drawn from `key`, on the finished crop (as timm runs them after its
// crop and flip; without data.mean's fill, timm's default gray), then augment.color_jitter, which
// timm applies only without a policy or beside 3-Augment.
void apply_automatic_augmentation(const AugmentSpec& a, uint64_t key, const std::vector<uint8_t>& fill, PixelView image) {
  if (a.auto_augment.kind == AugmentPolicy::Kind::kNone && a.color_jitter <= 0) return;
  // timm fills with the mean colour (gray without one); torchvision's TrivialAugmentWide with black.
  const bool black = a.auto_augment.kind == AugmentPolicy::Kind::kTrivial;
  std::vector<uint8_t> plain(static_cast<size_t>(image.channels), black ? 0 : 128);
  const uint8_t* fill_values = !black && fill.size() == static_cast<size_t>(image.channels) ? fill.data() : plain.data();
  for (const DrawnOp& op : draw_augment_ops(a.auto_augment, key, a.aa_interpolation)) apply_augment_op(image, op, fill_values);
  if (a.color_jitter <= 0 || !jitters_with(a.auto_augment)) return;
  constexpr uint64_t kJitterStream = 0x6a6974746572ULL;
  for (const DrawnOp& op : draw_color_jitter(a.color_jitter, mix64(key ^ kJitterStream))) apply_augment_op(image, op, fill_values);
}

}  // namespace

ResizeFilter resize_filter(AugmentInterpolation interpolation) {
  if (interpolation == AugmentInterpolation::kRandom) throw Error("resize_filter: 'random' is drawn per sample");
  return interpolation == AugmentInterpolation::kBicubic ? ResizeFilter::kBicubic : ResizeFilter::kBilinear;
}

CropPlan plan_sample(ImageSize source, const SampleTransform& t, size_t index) {
  CropPlan plan;
  const int size = static_cast<int>(t.image_size);
  if (!t.augment) {
    plan.filter = t.eval_filter;
    center_region(source, size, t.crop_fraction, plan);
    return plan;
  }
  const AugmentSpec& a = *t.augment;
  SplitMix64 rng(sample_key(t.seed, static_cast<uint64_t>(t.epoch), index));
  const bool random_crop = a.random_resized_crop.size() == 2;
  if (random_crop) random_resized_region(source, a.random_resized_crop, a.random_resized_crop_ratio, rng, plan);
  if (a.random_crop_padding > 0) {
    plan.pad_dy = static_cast<int>(rng.below(2 * a.random_crop_padding + 1));
    plan.pad_dx = static_cast<int>(rng.below(2 * a.random_crop_padding + 1));
  }
  // A flip that is off draws nothing, so the draws (and samples) of earlier recipes do not change.
  plan.flip = a.hflip.on() && rng.uniform() < a.hflip.p;
  plan.vflip = a.vflip.on() && rng.uniform() < a.vflip.p;
  plan.filter = draw_filter(a.interpolation, rng);
  if (!random_crop) center_region(source, size, t.crop_fraction, plan);  // draws nothing; which pixels it reads depends on the filter
  constexpr uint64_t kAugmentStream = 0x72616e6461756775ULL;
  plan.augment_key = mix64(sample_key(t.seed, static_cast<uint64_t>(t.epoch), index) ^ kAugmentStream);
  return plan;
}

void render_sample(const ImageWindow& decoded, ImageSize source, const CropPlan& plan, const SampleTransform& t, uint8_t* out) {
  const int size = static_cast<int>(t.image_size);
  cv::Mat result(size, size, CV_8UC(decoded.image.channels), out);  // writes straight into the batch
  if (plan.resized_width > 0)
    render_center_view(decoded, plan, size, out);
  else
    resize_crop(decoded.image, window_region(plan, source, decoded), plan.filter, result);
  if (plan.pad_dx >= 0) pad_and_crop(result, static_cast<int>(t.augment->random_crop_padding), plan.pad_dx, plan.pad_dy);
  if (plan.flip) cv::flip(result, result, 1);
  if (plan.vflip) cv::flip(result, result, 0);
  if (t.augment) apply_automatic_augmentation(*t.augment, plan.augment_key, t.augment_fill, PixelView{out, size, size, decoded.image.channels});
}

Image transform_sample(const Image& input, const SampleTransform& t, size_t index) {
  const ImageSize size{input.width, input.height};
  const int side = static_cast<int>(t.image_size);
  Image out{std::vector<uint8_t>(static_cast<size_t>(side) * side * input.channels), side, side, input.channels};
  render_sample(ImageWindow{input, size, 0, 0}, size, plan_sample(size, t, index), t, out.pixels.data());
  return out;
}

}  // namespace cvtrain
