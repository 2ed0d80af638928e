// Precision modes as scoped settings: autocast for bf16 and fp16 (CPU or CUDA; fp16 also needs the
// LossScaler), TF32 switches for CUDA.
#pragma once

#include <c10/core/DeviceType.h>

#include <string>

namespace cvtrain {

// Enables autocast to bfloat16 ("bf16") or float16 ("fp16") while alive; a no-op otherwise. Clears
// the cast cache on exit, as torch.autocast does, so weights re-cast after every optimizer step.
class AutocastScope {
 public:
  AutocastScope(const std::string& precision, c10::DeviceType device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType device_;
  bool previous_enabled_ = false;
};

// TF32 matmuls and convolutions on CUDA for "tf32", strict fp32 math otherwise.
void configure_tf32(const std::string& precision);

}  // namespace cvtrain
