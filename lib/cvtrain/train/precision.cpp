// Autocast through ATen's own switches, the same ones torch.autocast flips in Python.
#include "cvtrain/train/precision.h"

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>

namespace cvtrain {

AutocastScope::AutocastScope(const PrecisionPolicy& policy, c10::DeviceType device) : device_(device) {
  const AutocastType type = policy.autocast();
  if (type == AutocastType::kNone) return;
  active_ = true;
  previous_enabled_ = at::autocast::is_autocast_enabled(device_);
  at::autocast::set_autocast_enabled(device_, true);
  at::autocast::set_autocast_dtype(device_, type == AutocastType::kBFloat16 ? at::kBFloat16 : at::kHalf);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(device_, previous_enabled_);
}

void configure_tf32(const PrecisionPolicy& policy) {
  const bool tf32 = policy.tf32();
  at::globalContext().setAllowTF32CuBLAS(tf32);
  at::globalContext().setAllowTF32CuDNN(tf32);
}

}  // namespace cvtrain
