// Mixup and CutMix on a device batch, with timm's semantics (one mixing factor per batch, the
// batch mixed with itself reversed, label smoothing folded into the soft targets).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace cvtrain {

struct AugmentSpec;

struct MixedBatch {
  at::Tensor images;   // mixed copy of the input
  at::Tensor targets;  // float [B, num_classes], rows sum to 1
  double lambda = 1;   // weight of the unreversed batch (after CutMix, the area actually kept)
};

bool mixing_enabled(const AugmentSpec& augment);

// `key` fixes every random decision (whether to mix, which of Mixup and CutMix, lambda, box), so
// the mixing is as reproducible as the per-sample augmentation.
MixedBatch mix_batch(const at::Tensor& images, const at::Tensor& labels, int64_t num_classes, const AugmentSpec& augment,
                     uint64_t key);

// The key of one micro-batch's mixing: its seed, epoch and first sample, on a stream of its own.
uint64_t mix_key(uint64_t seed, int64_t epoch, int64_t first_sample);

// A Beta(alpha, alpha) draw from two Gamma draws (Marsaglia-Tsang), driven by `key`.
double beta_sample(double alpha, uint64_t key);

}  // namespace cvtrain
