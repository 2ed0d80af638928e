// Which Mixup or CutMix one micro-batch gets, as timm's Mixup draws it per batch (whether to mix,
// which of the two, the Beta factor, CutMix's box and the area it leaves): a pure function of the
// batch's key, torch-free, so that tests/parity/check_mix.py can set its draws against timm's. The
// tensors are mixed by data/batch_mix.h.
#pragma once

#include <cstdint>

namespace cvtrain {

struct AugmentSpec;

enum class MixKind { kNone, kMixup, kCutMix };

struct MixPlan {
  MixKind kind = MixKind::kNone;
  double lambda = 1;  // weight of the unreversed batch; CutMix: the share of the area left untouched
  // CutMix: the rows [top, bottom) and columns [left, right) pasted from the reversed batch (empty
  // when the box was clipped away).
  int64_t top = 0, bottom = 0, left = 0, right = 0;
};

bool mixing_enabled(const AugmentSpec& augment);

// timm's Mixup._params_per_batch and cutmix_bbox_and_lam (correct_lam) for a batch of
// `height` x `width` images; `key` fixes every decision.
MixPlan plan_mix(const AugmentSpec& augment, uint64_t key, int64_t height, int64_t width);

// The key of one micro-batch's mixing: its seed, epoch and first sample, on a stream of its own.
uint64_t mix_key(uint64_t seed, int64_t epoch, int64_t first_sample);

// A Beta(alpha, alpha) draw from two Gamma draws (Marsaglia-Tsang), driven by `key`.
double beta_sample(double alpha, uint64_t key);

}  // namespace cvtrain
