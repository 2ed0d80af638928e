// Mixup/CutMix on the tensors, as plan_mix decided.
#include "cvtrain/data/batch_mix.h"

#include <ATen/ATen.h>

#include "cvtrain/recipe/recipe.h"

namespace cvtrain {
namespace {

at::Tensor smoothed_one_hot(const at::Tensor& labels, int64_t num_classes, double smoothing) {
  const double off = smoothing / static_cast<double>(num_classes);
  const at::Tensor one_hot = at::one_hot(labels, num_classes).to(at::kFloat);
  return one_hot.mul(1.0 - smoothing).add_(off);
}

// Pastes the plan's box from the reversed batch.
void cut_and_paste(at::Tensor& images, const MixPlan& plan) {
  if (plan.bottom <= plan.top || plan.right <= plan.left) return;
  using at::indexing::Slice;
  const auto rows = Slice(plan.top, plan.bottom), columns = Slice(plan.left, plan.right);
  const at::Tensor patch = images.flip(0).index({Slice(), Slice(), rows, columns});
  images.index_put_({Slice(), Slice(), rows, columns}, patch);
}

}  // namespace

MixedBatch mix_batch(const at::Tensor& images, const at::Tensor& labels, int64_t num_classes, const AugmentSpec& a, uint64_t key) {
  MixedBatch out{images.clone(), smoothed_one_hot(labels, num_classes, a.label_smoothing), 1.0};
  const MixPlan plan = plan_mix(a, key, images.size(2), images.size(3));
  if (plan.kind == MixKind::kNone) return out;
  if (plan.kind == MixKind::kCutMix)
    cut_and_paste(out.images, plan);
  else
    out.images.mul_(plan.lambda).add_(images.flip(0), 1.0 - plan.lambda);
  out.lambda = plan.lambda;
  const at::Tensor reversed = out.targets.flip(0);
  out.targets.mul_(out.lambda).add_(reversed, 1.0 - out.lambda);
  return out;
}

}  // namespace cvtrain
