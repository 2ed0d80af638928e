// The rules `task` brings: which data formats, augmentations, losses and best-checkpoint metrics go
// with classification and which with segmentation, and the segmentation keys' own shapes.
#pragma once

#include "cvtrain/recipe/recipe_checks.h"

namespace cvtrain {

void check_task(const Recipe& recipe, const KeyFailure& fail);

// checkpoint.keep_best with auto resolved: the task's main score (top1, miou).
BestMetric resolved_best_metric(const Recipe& recipe);

// augment.crop_size as [height, width] (model.image_size square when empty).
std::pair<int64_t, int64_t> crop_size(const Recipe& recipe);

// data.eval_mode slide's windows: data.eval_window (else the crop size) every data.eval_stride
// pixels (else two thirds of the window).
struct SlidingWindow {
  int64_t height = 0, width = 0, stride_height = 0, stride_width = 0;
};
SlidingWindow sliding_window(const Recipe& recipe);
// The side of a square with as many pixels as a training input (model.image_size for classification,
// the crop for segmentation): what the micro-batch probe and the FLOP count feed the model.
int64_t square_side_of_training_input(const Recipe& recipe);

}  // namespace cvtrain
