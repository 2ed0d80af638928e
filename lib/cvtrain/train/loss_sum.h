// The training loss of a logging interval or an epoch: per-step mean losses summed on the device,
// where reading them would synchronise a GPU, and how many steps they are.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>

namespace cvtrain {

struct LossSum {
  explicit LossSum(const c10::Device& device);
  void add(const at::Tensor& loss);
  at::Tensor sum;
  int64_t steps = 0;
};

}  // namespace cvtrain
