// Precision modes as scoped settings: autocast for bf16 and fp16 (CPU or CUDA; fp16 also needs the
// LossScaler), TF32 switches for CUDA.
#pragma once

#include <c10/core/DeviceType.h>

#include "cvtrain/recipe/precision_policy.h"

namespace cvtrain {

// Enables autocast to the policy's type (bf16 or fp16) while alive; a no-op otherwise. Clears the
// cast cache on exit, as torch.autocast does, so weights re-cast after every optimizer step.
class AutocastScope {
 public:
  AutocastScope(const PrecisionPolicy& policy, c10::DeviceType device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType device_;
  bool previous_enabled_ = false;
};

// TF32 matmuls and convolutions on CUDA when the policy says so, strict fp32 math otherwise.
void configure_tf32(const PrecisionPolicy& policy);

}  // namespace cvtrain
