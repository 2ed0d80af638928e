// Semantic segmentation as a Task (train/task.h): image and mask pairs through mmseg's joint
// transforms, pixel cross-entropy with ignore_index, class weights and the auxiliary head's
// weight, and mIoU, pixel accuracy and per-class IoU from a confusion matrix at the masks' own
// resolution.
#pragma once

#include <memory>

#include "cvtrain/recipe/task_checks.h"
#include "cvtrain/train/task.h"

namespace cvtrain {

struct JointAugment;
class Classifier;
struct PrecisionPolicy;

// How evaluation and `cvtrain predict` run a segmentation model on a whole image: in one pass, or
// by sliding windows (data.eval_mode: slide), under the run's precision.
class SegmentationInference {
 public:
  explicit SegmentationInference(const Recipe& recipe);
  // float logits [B, K, H, W] of normalised `images` [B, C, h, w], resized (bilinear, as mmseg's)
  // to `size` {H, W} where that differs.
  at::Tensor logits(Classifier& model, const at::Tensor& images, const PrecisionPolicy& precision, at::IntArrayRef size) const;

 private:
  bool slide_;
  SlidingWindow window_;
};

std::unique_ptr<Task> make_segmentation_task(const Recipe& recipe);

// The recipe's joint transforms (augment.scale, ratio_range, crop_size, cat_max_ratio, hflip,
// photometric; data.ignore_index, the padding at data.mean).
JointAugment joint_augment(const Recipe& recipe);

// Pixel cross-entropy over the labelled pixels: the sum of each pixel's loss (times its class's
// weight) over the labelled pixels' weight, as PyTorch's cross_entropy(ignore_index, weight)
// averages, except that a batch with no labelled pixel gives 0, not NaN. `logits` float [B, K, H, W].
at::Tensor pixel_cross_entropy(const at::Tensor& logits, const at::Tensor& targets, int64_t ignore_index, const at::Tensor& class_weights);

}  // namespace cvtrain
