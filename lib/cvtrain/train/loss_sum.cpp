// LossSum (see loss_sum.h).
#include "cvtrain/train/loss_sum.h"

#include <ATen/ATen.h>

namespace cvtrain {

LossSum::LossSum(const c10::Device& device) : sum(at::zeros({}, at::TensorOptions(device).dtype(at::kDouble))) {}

void LossSum::add(const at::Tensor& loss) {
  sum += loss;
  ++steps;
}

}  // namespace cvtrain
