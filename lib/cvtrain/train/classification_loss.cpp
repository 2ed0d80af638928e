// timm's loss modules (timm/loss/binary_cross_entropy.py) in LibTorch's functional API.
#include "cvtrain/train/classification_loss.h"

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>

#include "cvtrain/recipe/recipe.h"

namespace cvtrain {
namespace {

namespace F = torch::nn::functional;

// BinaryCrossEntropy.forward: hard targets one-hot with off = smoothing / C, on = 1 - smoothing + off.
at::Tensor binary_cross_entropy(const at::Tensor& logits, at::Tensor targets, const LossSettings& s) {
  if (targets.dtype() == at::kLong) {
    const double off = s.label_smoothing / static_cast<double>(logits.size(1)), on = 1.0 - s.label_smoothing + off;
    targets = at::full(logits.sizes(), off, logits.options()).scatter_(1, targets.view({-1, 1}), on);
  }
  if (s.bce_target_threshold > 0) targets = targets.gt(s.bce_target_threshold).to(targets.scalar_type());
  return F::binary_cross_entropy_with_logits(logits, targets);
}

}  // namespace

at::Tensor classification_loss(const at::Tensor& logits, const at::Tensor& targets, const LossSettings& s) {
  if (s.kind == LossKind::kBce) return binary_cross_entropy(logits, targets, s);
  if (targets.dtype() != at::kLong) return F::cross_entropy(logits, targets);
  return F::cross_entropy(logits, targets, F::CrossEntropyFuncOptions().label_smoothing(s.label_smoothing));
}

}  // namespace cvtrain
