// The global gradient norm and clipping (see gradient_clipping.h).
#include "cvtrain/train/gradient_clipping.h"

#include <ATen/ATen.h>
#include <torch/utils.h>

#include "cvtrain/comm/communicator.h"

namespace cvtrain {

std::vector<at::Tensor> gradients_of(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> grads;
  for (const at::Tensor& t : tensors)
    if (t.grad().defined()) grads.push_back(t.grad());
  return grads;
}

at::Tensor clip_gradient_norm(const std::vector<at::Tensor>& tensors, double max_norm, const c10::Device& device,
                              Communicator* shards_over) {
  torch::NoGradGuard no_grad;
  const std::vector<at::Tensor> grads = gradients_of(tensors);
  at::Tensor total = grads.empty() ? at::zeros({}, at::TensorOptions(device).dtype(at::kFloat))
                                   : at::linalg_vector_norm(at::stack(at::_foreach_norm(grads, 2)).to(at::kFloat), 2);
  if (shards_over) {
    at::Tensor squares = total.pow(2);
    shards_over->all_reduce_sum(squares, "gradient norm all-reduce");
    total = squares.sqrt();
  }
  if (max_norm > 0 && !grads.empty()) {
    const at::Tensor coefficient = (max_norm / (total + 1e-6)).clamp_max(1.0);
    at::_foreach_mul_(grads, coefficient);
  }
  return total;
}

}  // namespace cvtrain
