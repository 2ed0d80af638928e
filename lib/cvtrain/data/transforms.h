// Per-sample geometry on uint8 HWC images: the training augmentation is a pure function of
// (seed, epoch, sample index); evaluation is deterministic resize plus center crop.
#pragma once

#include <cstdint>

#include "cvtrain/data/dataset.h"

namespace cvtrain {

struct AugmentSpec;

struct SampleTransform {
  const AugmentSpec* augment = nullptr;  // null: evaluation transform
  int64_t image_size = 0;
  uint64_t seed = 0;
  int64_t epoch = 0;
};

// Returns an image_size x image_size image with the input's channels.
Image transform_sample(const Image& input, const SampleTransform& transform, size_t index);

}  // namespace cvtrain
