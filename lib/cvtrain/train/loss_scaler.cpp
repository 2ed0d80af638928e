// LossScaler over at::_amp_foreach_non_finite_check_and_unscale_ and at::_amp_update_scale_.
#include "cvtrain/train/loss_scaler.h"

#include <ATen/ATen.h>

namespace cvtrain {

LossScaler::LossScaler(bool enabled, c10::Device device, LossScalerState initial) : enabled_(enabled) {
  const auto options = at::TensorOptions(device);
  scale_ = at::full({1}, initial.scale, options.dtype(at::kFloat));
  growth_tracker_ = at::full({1}, initial.growth_tracker, options.dtype(at::kInt));
}

at::Tensor LossScaler::scale(const at::Tensor& loss) const { return enabled_ ? loss * scale_.to(loss.scalar_type()) : loss; }

at::Tensor LossScaler::unscale(const std::vector<at::Tensor>& parameters) {
  at::Tensor found_inf = at::zeros({1}, scale_.options());
  if (!enabled_) return found_inf;
  std::vector<at::Tensor> grads;
  for (const auto& p : parameters)
    if (p.grad().defined()) grads.push_back(p.grad());
  // The fused op takes tensors of one device and dtype per call, as GradScaler groups them.
  if (!grads.empty()) at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, scale_.reciprocal());
  return found_inf;
}

void LossScaler::update(bool overflow) {
  if (enabled_) update(at::full({1}, overflow ? 1.0f : 0.0f, scale_.options()));
}

void LossScaler::update(const at::Tensor& overflow) {
  if (enabled_) at::_amp_update_scale_(scale_, growth_tracker_, overflow, kGrowth, kBackoff, kGrowthInterval);
}

LossScalerState LossScaler::state() const {
  return LossScalerState{scale_.item<double>(), static_cast<int64_t>(growth_tracker_.item<int>())};
}

}  // namespace cvtrain
