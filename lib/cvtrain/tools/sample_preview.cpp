// The same loader, feeder and mixing the trainer runs, on the CPU, for one batch of the epoch's
// first samples; then the normalisation undone and the samples drawn into a labelled grid.
#include "cvtrain/tools/sample_preview.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>

#include "cvtrain/core/error.h"
#include "cvtrain/core/png_file.h"
#include "cvtrain/data/auto_augment.h"
#include "cvtrain/data/batch_loader.h"
#include "cvtrain/data/batch_mix.h"
#include "cvtrain/data/device_feeder.h"
#include "cvtrain/data/host_normalize.h"
#include "cvtrain/data/sampler.h"
#include "cvtrain/launch/rank_environment.h"
#include "cvtrain/recipe/precision_policy.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/tools/pair_preview.h"
#include "cvtrain/tools/preview_pixels.h"
#include "cvtrain/train/run_builder.h"
#include "cvtrain/train/run_data.h"

namespace cvtrain {
namespace {

struct SamplesSeen {
  at::Tensor pixels;   // uint8 [N, H, W, 3], denormalised
  at::Tensor targets;  // int64 [N] labels, or float [N, classes] soft targets after mixing
};

SamplesSeen first_samples(const Recipe& recipe, const RunData& data, const PreviewOptions& o) {
  const Dataset& train = *data.train;
  const int64_t count = std::min<int64_t>(o.count, static_cast<int64_t>(train.size()));
  const c10::Device cpu(c10::kCPU);
  std::vector<int64_t> order = repeated_order(epoch_order(static_cast<uint64_t>(recipe.train.seed), o.epoch, train.size()),
                                              recipe.augment.repeats, recipe.train.global_batch);
  order.resize(std::min(order.size(), static_cast<size_t>(count)));
  LoaderOptions options = loader_options(recipe.data, recipe.train, recipe.model.image_size, cpu, RankInfo{});
  options.batch_size = count;
  options.workers = 0;
  options.transform.augment = &recipe.augment;
  options.transform.augment_fill = augment_fill(recipe.data.mean);
  options.transform.epoch = o.epoch;
  options.bad_samples = data.train_bad.get();
  FeedOptions feed = feed_options(recipe.data, PrecisionPolicy{Precision::kFp32}, cpu);
  feed.erase_mode = recipe.augment.random_erasing.mode;
  options.normalize = host_normalize(feed);
  BatchLoader loader(train, std::move(order), options);
  DeviceFeeder feeder(loader, feed);
  DeviceBatch batch = *feeder.next();
  SamplesSeen seen{batch.images, batch.targets};
  if (mixing_enabled(recipe.augment)) {
    const MixedBatch mixed = mix_batch(batch.images, batch.targets, recipe.model.num_classes, recipe.augment,
                                       mix_key(static_cast<uint64_t>(recipe.train.seed), o.epoch, batch.first_sample));
    seen = {mixed.images, mixed.targets};
  }
  seen.pixels = viewable_pixels(seen.pixels, recipe.data.mean, recipe.data.std);
  return seen;
}

std::string class_text(const std::vector<std::string>& names, int64_t label) {
  return label >= 0 && label < static_cast<int64_t>(names.size()) ? names[static_cast<size_t>(label)] : std::to_string(label);
}

// The label, or after mixing the two classes with the largest weights ("cat .62 dog .38").
std::string label_of(const SamplesSeen& seen, int64_t i, const std::vector<std::string>& names) {
  if (seen.targets.dtype() == at::kLong) return class_text(names, seen.targets[i].item<int64_t>());
  const auto top = seen.targets[i].topk(2);
  const auto weight = [&](int k) { return std::get<0>(top)[k].item<float>(); };
  const auto label = [&](int k) { return std::get<1>(top)[k].item<int64_t>(); };
  if (weight(1) < 0.05f) return class_text(names, label(0));
  return fmt::format("{} {:.2f} {} {:.2f}", class_text(names, label(0)), weight(0), class_text(names, label(1)), weight(1));
}

// Cut to what fits in `width` pixels of the label font.
std::string fitted(std::string text, int width) {
  int baseline = 0;
  while (text.size() > 1 && cv::getTextSize(text, cv::FONT_HERSHEY_PLAIN, 0.9, 1, &baseline).width > width) text.pop_back();
  return text;
}

cv::Mat grid_of(const SamplesSeen& seen, const std::vector<std::string>& names) {
  const int64_t n = seen.pixels.size(0);
  const int side = static_cast<int>(seen.pixels.size(1));
  const int scale = std::max(1, (kPreviewMinTile + side - 1) / side);
  const int tile = side * scale;
  const int cols = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n)))), rows = static_cast<int>((n + cols - 1) / cols);
  cv::Mat grid(rows * (tile + kPreviewLabelBand + kPreviewGap) + kPreviewGap, cols * (tile + kPreviewGap) + kPreviewGap, CV_8UC3, cv::Scalar(255, 255, 255));
  for (int64_t i = 0; i < n; ++i) {
    const int x = kPreviewGap + static_cast<int>(i % cols) * (tile + kPreviewGap), y = kPreviewGap + static_cast<int>(i / cols) * (tile + kPreviewLabelBand + kPreviewGap);
    const cv::Mat sample(side, side, CV_8UC3, seen.pixels[i].data_ptr<uint8_t>());
    cv::resize(sample, grid(cv::Rect(x, y, tile, tile)), cv::Size(tile, tile), 0, 0, cv::INTER_NEAREST);
    cv::putText(grid, fitted(label_of(seen, i, names), tile), cv::Point(x, y + tile + kPreviewLabelBand - 4), cv::FONT_HERSHEY_PLAIN, 0.9,
                cv::Scalar(0, 0, 0), 1, cv::LINE_AA);
  }
  return grid;
}

}  // namespace

at::Tensor viewable_pixels(const at::Tensor& normalised, const std::vector<double>& mean, const std::vector<double>& std) {
  const auto c = static_cast<int64_t>(mean.size());
  const at::Tensor m = at::tensor(mean, at::kDouble).to(at::kFloat).view({1, c, 1, 1});
  const at::Tensor s = at::tensor(std, at::kDouble).to(at::kFloat).view({1, c, 1, 1});
  at::Tensor pixels = (normalised.to(at::kFloat) * s + m).mul(255).round().clamp(0, 255).to(at::kByte);
  if (c == 1) pixels = pixels.expand({-1, 3, -1, -1});
  return pixels.permute({0, 2, 3, 1}).contiguous();
}

PreviewResult write_sample_preview(const Recipe& recipe, const PreviewOptions& options) {
  if (recipe.data.format == DataFormat::kSynthetic)
    throw Error("data preview: synthetic data is random noise made on the device; there are no files to show");
  if (options.count < 1) throw Error("data preview: --count must be at least 1");
  if (recipe.task == TaskKind::kSegmentation) return write_pair_preview(recipe, options);
  const RunData data = open_run_data(recipe);
  const SamplesSeen seen = first_samples(recipe, data, options);
  const cv::Mat grid = grid_of(seen, data.train->class_names());
  write_png(options.out, grid.data, grid.cols, grid.rows, 3);
  return PreviewResult{seen.pixels.size(0), grid.cols, grid.rows};
}

}  // namespace cvtrain
