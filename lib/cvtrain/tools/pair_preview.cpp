// The task's own training batches (the joint transforms the step runs) through the same loader and
// feeder on the CPU, the normalisation undone, and each crop drawn beside its mask laid over it.
#include "cvtrain/tools/pair_preview.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "cvtrain/core/error.h"
#include "cvtrain/core/png_file.h"
#include "cvtrain/data/batch_loader.h"
#include "cvtrain/data/device_feeder.h"
#include "cvtrain/data/sampler.h"
#include "cvtrain/data/segmentation_dataset.h"
#include "cvtrain/launch/rank_environment.h"
#include "cvtrain/recipe/precision_policy.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/tools/preview_pixels.h"
#include "cvtrain/train/run_builder.h"
#include "cvtrain/train/run_data.h"
#include "cvtrain/train/task.h"

namespace cvtrain {
namespace {

constexpr int kMaxTile = 320;  // large crops are shrunk to at most this side (small ones enlarged: kPreviewMinTile)
constexpr double kMaskOpacity = 0.5;
constexpr double kIgnoredBrightness = 0.35;  // pixels of data.ignore_index are dimmed, not coloured

struct PairsSeen {
  at::Tensor pixels;  // uint8 [N, h, w, 3], denormalised
  at::Tensor masks;   // uint8 [N, h, w]
};

PairsSeen first_pairs(const Recipe& recipe, const Dataset& train, const PreviewOptions& o) {
  const int64_t count = std::min<int64_t>(o.count, static_cast<int64_t>(train.size()));
  std::vector<int64_t> order = epoch_order(static_cast<uint64_t>(recipe.train.seed), o.epoch, train.size());
  order.resize(static_cast<size_t>(count));
  const c10::Device cpu(c10::kCPU);
  LoaderOptions options = loader_options(recipe.data, recipe.train, recipe.model.image_size, cpu, RankInfo{});
  options.batch_size = count;
  options.workers = 0;
  options.transform.epoch = o.epoch;
  const std::unique_ptr<Task> task = make_task(recipe);
  BatchLoader loader(task->training_batches(train, options), std::move(order), options);
  DeviceFeeder feeder(loader, feed_options(recipe.data, PrecisionPolicy{Precision::kFp32}, cpu));
  const DeviceBatch batch = *feeder.next();
  return {viewable_pixels(batch.images, recipe.data.mean, recipe.data.std), batch.targets.contiguous()};
}

// The crop with each labelled pixel blended with its class's colour.
cv::Mat overlay_of(const cv::Mat& image, const cv::Mat& mask, const std::vector<Colour>& palette, int64_t ignore_index) {
  cv::Mat out = image.clone();
  for (int y = 0; y < image.rows; ++y)
    for (int x = 0; x < image.cols; ++x) {
      const uint8_t id = mask.at<uint8_t>(y, x);
      auto& pixel = out.at<cv::Vec3b>(y, x);
      for (int c = 0; c < 3; ++c) {
        const double value = id == ignore_index || id >= palette.size()
                                 ? pixel[c] * kIgnoredBrightness
                                 : (1 - kMaskOpacity) * pixel[c] + kMaskOpacity * palette[id][static_cast<size_t>(c)];
        pixel[c] = static_cast<uint8_t>(std::lround(value));
      }
    }
  return out;
}

// The two classes covering most of the crop: "circle 31% square 12%".
std::string caption_of(const cv::Mat& mask, const std::vector<std::string>& names, int64_t ignore_index) {
  std::vector<int64_t> pixels(256, 0);
  for (int y = 0; y < mask.rows; ++y)
    for (int x = 0; x < mask.cols; ++x) ++pixels[mask.at<uint8_t>(y, x)];
  pixels[static_cast<size_t>(ignore_index) & 0xff] = 0;
  std::vector<size_t> ids(pixels.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](size_t a, size_t b) { return pixels[a] > pixels[b]; });
  std::string caption;
  const double total = static_cast<double>(mask.rows) * mask.cols;
  for (size_t i = 0; i < 2 && pixels[ids[i]] > 0; ++i)
    caption += fmt::format("{}{} {:.0f}%", caption.empty() ? "" : " ", ids[i] < names.size() ? names[ids[i]] : std::to_string(ids[i]),
                           100.0 * pixels[ids[i]] / total);
  return caption;
}

cv::Mat grid_of(const PairsSeen& seen, const std::vector<Colour>& palette, const std::vector<std::string>& names, int64_t ignore_index) {
  const int64_t n = seen.pixels.size(0);
  const int h = static_cast<int>(seen.pixels.size(1)), w = static_cast<int>(seen.pixels.size(2));
  const double side = std::max(h, w);
  const double scale = side < kPreviewMinTile ? std::ceil(kPreviewMinTile / side) : std::min(1.0, kMaxTile / side);
  const int th = static_cast<int>(std::lround(h * scale)), tw = static_cast<int>(std::lround(w * scale));
  const int pairs_per_row = std::max(1, static_cast<int>(std::floor(std::sqrt(static_cast<double>(n)))));
  const int rows = static_cast<int>((n + pairs_per_row - 1) / pairs_per_row);
  const int pair_width = 2 * tw + kPreviewGap;
  cv::Mat grid(rows * (th + kPreviewLabelBand + kPreviewGap) + kPreviewGap, pairs_per_row * (pair_width + 2 * kPreviewGap) + kPreviewGap, CV_8UC3, cv::Scalar(255, 255, 255));
  const int interpolation = scale >= 1 ? cv::INTER_NEAREST : cv::INTER_AREA;
  for (int64_t i = 0; i < n; ++i) {
    const int x = kPreviewGap + static_cast<int>(i % pairs_per_row) * (pair_width + 2 * kPreviewGap);
    const int y = kPreviewGap + static_cast<int>(i / pairs_per_row) * (th + kPreviewLabelBand + kPreviewGap);
    const cv::Mat image(h, w, CV_8UC3, seen.pixels[i].data_ptr<uint8_t>());
    const cv::Mat mask(h, w, CV_8UC1, seen.masks[i].data_ptr<uint8_t>());
    cv::resize(image, grid(cv::Rect(x, y, tw, th)), cv::Size(tw, th), 0, 0, interpolation);
    cv::Mat overlay;
    cv::resize(overlay_of(image, mask, palette, ignore_index), overlay, cv::Size(tw, th), 0, 0, interpolation);
    overlay.copyTo(grid(cv::Rect(x + tw + kPreviewGap, y, tw, th)));
    cv::putText(grid, caption_of(mask, names, ignore_index), cv::Point(x, y + th + kPreviewLabelBand - 4), cv::FONT_HERSHEY_PLAIN, 0.9,
                cv::Scalar(0, 0, 0), 1, cv::LINE_AA);
  }
  return grid;
}

}  // namespace

PreviewResult write_pair_preview(const Recipe& recipe, const PreviewOptions& options) {
  const RunData data = open_run_data(recipe);
  const auto* pairs = dynamic_cast<const SegmentationDataset*>(data.train.get());
  if (!pairs) throw Error("data preview: task: segmentation needs image and mask pairs in data.train");
  const PairsSeen seen = first_pairs(recipe, *pairs, options);
  const cv::Mat grid =
      grid_of(seen, drawing_palette(pairs->layout(), recipe.model.num_classes), pairs->class_names(), recipe.data.ignore_index);
  write_png(options.out, grid.data, grid.cols, grid.rows, 3);
  return PreviewResult{seen.pixels.size(0), grid.cols, grid.rows};
}

}  // namespace cvtrain
