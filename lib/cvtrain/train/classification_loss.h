// The training loss: cross-entropy (label smoothing, or the soft targets of Mixup/CutMix), or
// timm's BinaryCrossEntropy (ResNet strikes back): one-hot targets with smoothing, optionally
// thresholded to 0/1, through binary cross-entropy with logits averaged over every element.
#pragma once

#include <ATen/core/Tensor.h>

namespace cvtrain {

enum class LossKind;

struct LossSettings {
  LossKind kind{};
  double label_smoothing = 0;        // applied here only to hard targets (mixing folds it in already)
  double bce_target_threshold = 0;   // bce: targets above it become 1, the rest 0; 0 = off
};

// `logits` float [B, C]; `targets` int64 class indices [B] or float soft targets [B, C].
at::Tensor classification_loss(const at::Tensor& logits, const at::Tensor& targets, const LossSettings& settings);

}  // namespace cvtrain
