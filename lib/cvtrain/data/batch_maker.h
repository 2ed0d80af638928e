// What the loader's workers make: one batch of samples, pixels and targets, by the task's rules
// (classification_batches.h: images and labels; segmentation_batches.h: crops and their masks).
// The loader (batch_loader.h) decides which samples, when and on which thread.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "cvtrain/data/sample_pipeline.h"

namespace cvtrain {

struct Batch {
  at::Tensor images;                   // uint8 [B, H, W, C]; with LoaderOptions::normalize, float [B, C, H, W], erased
  at::Tensor targets;                  // what the loss compares with: int64 [B] class labels, or uint8 [B, H, W] masks
  int64_t first_sample = 0;            // dataset index of the batch's first sample (keys batch-level randomness)
  at::Tensor erase_boxes;              // int32 [B, K, 4] of augment.random_erasing (erase_box_tensor); undefined: none (or done)
  uint64_t erase_key = 0;              // seeds the erasing's fill
  std::vector<EncodedSample> encoded;  // samples left for the device decoder (their slots of `images` unset)
};

class BatchMaker {
 public:
  virtual ~BatchMaker() = default;
  // The samples order[first, first + count) as one batch, each keyed by its entry of the order
  // (sampler.h: the dataset index, or a repeat of it). Called by several workers at once.
  virtual Batch make(const std::vector<int64_t>& order, int64_t first, int64_t count) = 0;
};

}  // namespace cvtrain
