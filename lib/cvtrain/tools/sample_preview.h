// `cvtrain data preview`: the first training samples of an epoch exactly as the step receives them
// (crop, flip, automatic augmentation, random erasing, Mixup/CutMix), denormalised for viewing and
// tiled with their labels into one PNG, so a team checks its augmentation by looking at it.
#pragma once

#include <cstdint>
#include <string>

namespace cvtrain {

struct Recipe;

struct PreviewOptions {
  std::string out = "preview.png";
  int64_t count = 64;  // samples, in the epoch's order; mixed as one micro-batch of this size
  int64_t epoch = 0;
};

struct PreviewResult {
  int64_t samples = 0;
  int width = 0, height = 0;  // of the PNG
};

PreviewResult write_sample_preview(const Recipe& recipe, const PreviewOptions& options);

}  // namespace cvtrain
