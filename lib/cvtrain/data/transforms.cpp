// Augmentation through OpenCV imgproc. Random decisions are drawn from one SplitMix64 stream per
// sample in a fixed order (resized crop, pad-crop offsets, flip) mirrored by reference_train.py.
#include "cvtrain/data/transforms.h"

#include <opencv2/imgproc.hpp>

#include <cmath>

#include "cvtrain/core/rng.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {
namespace {

cv::Mat as_mat(const Image& image) {
  return cv::Mat(image.height, image.width, CV_8UC(image.channels), const_cast<uint8_t*>(image.pixels.data()));
}

Image from_mat(const cv::Mat& mat) {
  cv::Mat dense = mat.isContinuous() ? mat : mat.clone();
  Image out{std::vector<uint8_t>(dense.data, dense.data + dense.total() * dense.elemSize()), dense.rows, dense.cols, dense.channels()};
  return out;
}

cv::Mat resize_to(const cv::Mat& src, int width, int height) {
  if (src.cols == width && src.rows == height) return src;
  cv::Mat out;
  const bool shrinking = width < src.cols && height < src.rows;
  cv::resize(src, out, cv::Size(width, height), 0, 0, shrinking ? cv::INTER_AREA : cv::INTER_LINEAR);
  return out;
}

// Evaluation (and non-RRC training) view: shorter side to size/0.875, then the centered square.
// An image already at the target size is left alone (IDX data).
cv::Mat resize_center_crop(const cv::Mat& src, int size) {
  if (src.cols == size && src.rows == size) return src;
  const double short_side = std::round(size / 0.875);
  const double scale = short_side / std::min(src.cols, src.rows);
  const int w = std::max(size, static_cast<int>(std::lround(src.cols * scale)));
  const int h = std::max(size, static_cast<int>(std::lround(src.rows * scale)));
  const cv::Mat resized = resize_to(src, w, h);
  return resized(cv::Rect((w - size) / 2, (h - size) / 2, size, size));
}

// torchvision's RandomResizedCrop: 10 tries at a random area and log-uniform aspect ratio, then
// the whole image's central crop as a fallback.
cv::Mat random_resized_crop(const cv::Mat& src, int size, double min_scale, double max_scale, SplitMix64& rng) {
  const double area = static_cast<double>(src.cols) * src.rows;
  const double log_lo = std::log(3.0 / 4.0), log_hi = std::log(4.0 / 3.0);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * rng.uniform(min_scale, max_scale);
    const double aspect = std::exp(rng.uniform(log_lo, log_hi));
    const int w = static_cast<int>(std::lround(std::sqrt(target * aspect)));
    const int h = static_cast<int>(std::lround(std::sqrt(target / aspect)));
    if (w > 0 && h > 0 && w <= src.cols && h <= src.rows) {
      const int x = static_cast<int>(rng.below(static_cast<uint64_t>(src.cols - w + 1)));
      const int y = static_cast<int>(rng.below(static_cast<uint64_t>(src.rows - h + 1)));
      return resize_to(src(cv::Rect(x, y, w, h)), size, size);
    }
  }
  const int side = std::min(src.cols, src.rows);
  return resize_to(src(cv::Rect((src.cols - side) / 2, (src.rows - side) / 2, side, side)), size, size);
}

cv::Mat pad_and_crop(const cv::Mat& src, int padding, SplitMix64& rng) {
  const int dy = static_cast<int>(rng.below(2 * padding + 1));
  const int dx = static_cast<int>(rng.below(2 * padding + 1));
  cv::Mat padded;
  cv::copyMakeBorder(src, padded, padding, padding, padding, padding, cv::BORDER_CONSTANT, cv::Scalar::all(0));
  return padded(cv::Rect(dx, dy, src.cols, src.rows));
}

}  // namespace

Image transform_sample(const Image& input, const SampleTransform& t, size_t index) {
  const int size = static_cast<int>(t.image_size);
  const cv::Mat src = as_mat(input);
  if (!t.augment) return from_mat(resize_center_crop(src, size));
  const AugmentSpec& a = *t.augment;
  SplitMix64 rng(sample_key(t.seed, static_cast<uint64_t>(t.epoch), index));
  cv::Mat out = a.random_resized_crop.size() == 2
                    ? random_resized_crop(src, size, a.random_resized_crop[0], a.random_resized_crop[1], rng)
                    : resize_center_crop(src, size);
  if (a.random_crop_padding > 0) out = pad_and_crop(out, static_cast<int>(a.random_crop_padding), rng);
  if (a.hflip && rng.uniform() < 0.5) {
    cv::Mat flipped;
    cv::flip(out, flipped, 1);
    out = flipped;
  }
  return from_mat(out);
}

}  // namespace cvtrain
