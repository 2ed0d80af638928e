// Dynamic loss scaling for fp16, on LibTorch's AMP operators (the ones torch.amp.GradScaler uses):
// the loss is multiplied by the scale before backward, gradients are unscaled and checked for
// inf/NaN in one pass, an overflowing step is skipped and the scale halved, and after
// `growth_interval` clean steps in a row the scale doubles.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace cvtrain {

struct LossScalerState {
  double scale = 65536.0;
  int64_t growth_tracker = 0;  // clean steps since the scale last changed
};

class LossScaler {
 public:
  // Disabled: scale() and unscale() pass through, update() does nothing.
  LossScaler(bool enabled, c10::Device device, LossScalerState initial = {});
  bool enabled() const { return enabled_; }
  at::Tensor scale(const at::Tensor& loss) const;
  // Divides every defined gradient by the scale; returns a device flag (float [1]) that is 1 when
  // any gradient held an inf or NaN.
  at::Tensor unscale(const std::vector<at::Tensor>& parameters);
  // After the step: halve on overflow (the step must have been skipped), grow after a clean run.
  void update(bool overflow);
  // The same with the overflow as a device flag (float [1], 0 or 1): no synchronisation.
  void update(const at::Tensor& overflow);
  // The current scale, float [1] on the device (read it only outside the step's hot path).
  const at::Tensor& scale_tensor() const { return scale_; }
  LossScalerState state() const;

 private:
  bool enabled_;
  at::Tensor scale_;           // float [1] on the device
  at::Tensor growth_tracker_;  // int32 [1] on the device
  static constexpr double kGrowth = 2.0, kBackoff = 0.5;
  static constexpr int64_t kGrowthInterval = 2000;
};

}  // namespace cvtrain
