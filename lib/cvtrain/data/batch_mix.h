// Mixup and CutMix on a device batch, with timm's semantics (one mixing factor per batch, the
// batch mixed with itself reversed, label smoothing folded into the soft targets). What each batch
// gets is planned by data/mix_plan.h.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "cvtrain/data/mix_plan.h"

namespace cvtrain {

struct AugmentSpec;

struct MixedBatch {
  at::Tensor images;   // mixed copy of the input
  at::Tensor targets;  // float [B, num_classes], rows sum to 1
  double lambda = 1;   // weight of the unreversed batch (after CutMix, the area actually kept)
};

// `key` fixes every random decision (whether to mix, which of Mixup and CutMix, lambda, box), so
// the mixing is as reproducible as the per-sample augmentation.
MixedBatch mix_batch(const at::Tensor& images, const at::Tensor& labels, int64_t num_classes, const AugmentSpec& augment,
                     uint64_t key);

}  // namespace cvtrain
