// One function per direction: what segmentation cannot take from classification's keys, and what
// only segmentation reads.
#include "cvtrain/recipe/task_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "cvtrain/recipe/data_format.h"

namespace cvtrain {
namespace {

bool whole_positive(double v) { return v >= 1 && v == static_cast<double>(static_cast<int64_t>(v)); }

void check_pair(const std::vector<double>& values, const char* key, const char* what, bool allow_empty, const KeyFailure& fail) {
  if (values.empty() && allow_empty) return;
  if (values.size() != 2 || !whole_positive(values[0]) || !whole_positive(values[1]))
    fail(key, fmt::format("expected {}: two whole numbers of pixels, e.g. [512, 1024]", what));
}

// Classification's augmentations and losses have no meaning for masks (a mixed or erased image
// has no mask to go with it).
void check_segmentation(const Recipe& r, const KeyFailure& fail) {
  if (r.data.format != DataFormat::kAuto && r.data.format != DataFormat::kSynthetic && r.data.format != DataFormat::kShards &&
      !is_pairs_format(r.data.format))
    fail("data.format", fmt::format("{} holds images with class labels; task: segmentation reads image and mask pairs: voc, ade20k, "
                                    "cityscapes, a list of image,mask rows, shards of pairs packed from them, or synthetic crops and masks",
                                    name_of(r.data.format)));
  const AugmentSpec& a = r.augment;
  const std::vector<std::pair<const char*, bool>> classification_only{
      {"augment.mixup", a.mixup > 0},
      {"augment.cutmix", a.cutmix > 0},
      {"augment.random_erasing.prob", a.random_erasing.prob > 0},
      {"augment.auto_augment", !a.auto_augment.spelled.empty()},
      {"augment.random_resized_crop", !a.random_resized_crop.empty()},
      {"augment.random_crop_padding", a.random_crop_padding > 0},
      {"augment.color_jitter", a.color_jitter > 0},
      {"augment.vflip", a.vflip.on()},
      {"augment.repeats", a.repeats > 1},
      {"augment.label_smoothing", a.label_smoothing > 0},
      {"train.loss", r.train.loss != LossKind::kCe},
  };
  for (const auto& [key, on] : classification_only)
    if (on)
      fail(key,
           "is for task: classification; segmentation's pipeline is augment.scale, ratio_range, crop_size, cat_max_ratio, "
           "hflip and photometric, and its loss pixel cross-entropy");
  if (r.data.decoder == DecoderKind::kNvjpeg)
    fail("data.decoder", "nvjpeg decodes classification images; segmentation pairs decode on the CPU");
  check_pair(a.crop_size, "augment.crop_size", "[height, width]", true, fail);
  check_pair(r.data.eval_window, "data.eval_window", "[height, width] of the sliding window", true, fail);
  check_pair(r.data.eval_stride, "data.eval_stride", "[height, width] between windows", true, fail);
  check_pair(a.scale, "augment.scale", "[long, short] sides to fit images within", true, fail);
  if (a.ratio_range.size() != 2 || a.ratio_range[0] <= 0 || a.ratio_range[0] > a.ratio_range[1])
    fail("augment.ratio_range", "expected [min, max] with 0 < min <= max, e.g. mmseg's [0.5, 2.0]");
  const SlidingWindow window = sliding_window(r);
  if (window.stride_height > window.height || window.stride_width > window.width)
    fail("data.eval_stride", fmt::format("[{}, {}] is wider than the window [{}, {}]: pixels between windows would be left out",
                                         window.stride_height, window.stride_width, window.height, window.width));
  const auto& w = r.train.class_weights;
  if (!w.empty() && static_cast<int64_t>(w.size()) != r.model.num_classes)
    fail("train.class_weights",
         fmt::format("has {} values and model.num_classes is {}: one weight per class", w.size(), r.model.num_classes));
  for (double v : w)
    if (v < 0) fail("train.class_weights", fmt::format("weights cannot be negative, got {}", v));
  if (r.model.num_classes > 255)
    fail("model.num_classes", fmt::format("{} classes, but masks hold one byte per pixel: ids 0 to 254 are classes and 255 is "
                                          "data.ignore_index, so segmentation takes at most 255 classes",
                                          r.model.num_classes));
  else if (r.data.ignore_index < r.model.num_classes)
    fail("data.ignore_index", fmt::format("{} is a class id (model.num_classes is {}); unlabelled pixels need an id of their own, "
                                          "usually 255",
                                          r.data.ignore_index, r.model.num_classes));
  if (r.checkpoint.keep_best == BestMetric::kTop1 || r.checkpoint.keep_best == BestMetric::kTop1Ema)
    fail("checkpoint.keep_best", "top-1 is a classification score; segmentation keeps the best by miou (or miou_ema)");
}

void check_classification(const Recipe& r, const KeyFailure& fail) {
  if (r.data.format == DataFormat::kVoc || r.data.format == DataFormat::kAde20k || r.data.format == DataFormat::kCityscapes)
    fail("data.format", fmt::format("{} holds segmentation pairs; set task: segmentation", name_of(r.data.format)));
  // Away from their defaults (a resolved recipe, as a run folder keeps it, spells every key).
  const Recipe d;
  const std::vector<std::pair<const char*, bool>> segmentation_only{
      {"data.ignore_index", r.data.ignore_index != d.data.ignore_index},
      {"data.reduce_zero_label", r.data.reduce_zero_label != d.data.reduce_zero_label},
      {"data.eval_mode", r.data.eval_mode != d.data.eval_mode},
      {"data.eval_window", !r.data.eval_window.empty()},
      {"data.eval_stride", !r.data.eval_stride.empty()},
      {"augment.crop_size", !r.augment.crop_size.empty()},
      {"augment.scale", !r.augment.scale.empty()},
      {"augment.ratio_range", r.augment.ratio_range != d.augment.ratio_range},
      {"augment.cat_max_ratio", r.augment.cat_max_ratio != d.augment.cat_max_ratio},
      {"augment.photometric", r.augment.photometric},
      {"train.aux_loss_weight", r.train.aux_loss_weight != d.train.aux_loss_weight},
      {"train.class_weights", !r.train.class_weights.empty()},
  };
  for (const auto& [key, set] : segmentation_only)
    if (set) fail(key, "is for task: segmentation (masks); this recipe's task is classification");
  if (r.checkpoint.keep_best == BestMetric::kMiou || r.checkpoint.keep_best == BestMetric::kMiouEma)
    fail("checkpoint.keep_best", "mIoU is a segmentation score; classification keeps the best by top1 (or top1_ema)");
}

}  // namespace

void check_task(const Recipe& r, const KeyFailure& fail) {
  if (r.task == TaskKind::kSegmentation)
    check_segmentation(r, fail);
  else
    check_classification(r, fail);
}

BestMetric resolved_best_metric(const Recipe& r) {
  if (r.checkpoint.keep_best != BestMetric::kAuto) return r.checkpoint.keep_best;
  return r.task == TaskKind::kSegmentation ? BestMetric::kMiou : BestMetric::kTop1;
}

std::pair<int64_t, int64_t> crop_size(const Recipe& r) {
  const auto& c = r.augment.crop_size;
  if (c.size() == 2) return {static_cast<int64_t>(c[0]), static_cast<int64_t>(c[1])};
  return {r.model.image_size, r.model.image_size};
}

SlidingWindow sliding_window(const Recipe& r) {
  const auto [crop_height, crop_width] = crop_size(r);
  SlidingWindow w;
  w.height = r.data.eval_window.size() == 2 ? static_cast<int64_t>(r.data.eval_window[0]) : crop_height;
  w.width = r.data.eval_window.size() == 2 ? static_cast<int64_t>(r.data.eval_window[1]) : crop_width;
  // mmseg's 512-pixel windows every 341: two thirds, rounded down.
  w.stride_height = r.data.eval_stride.size() == 2 ? static_cast<int64_t>(r.data.eval_stride[0]) : std::max<int64_t>(1, w.height * 2 / 3);
  w.stride_width = r.data.eval_stride.size() == 2 ? static_cast<int64_t>(r.data.eval_stride[1]) : std::max<int64_t>(1, w.width * 2 / 3);
  return w;
}

int64_t square_side_of_training_input(const Recipe& r) {
  const auto [height, width] = crop_size(r);
  return static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(height * width))));
}

}  // namespace cvtrain
