// The global gradient norm and clipping to it, as torch.nn.utils.clip_grad_norm_ computes them
// (the norm of the per-tensor norms) and, for shards, as FSDP's clip_grad_norm_ does (squares of
// each rank's local norm summed over the ranks).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <vector>

namespace cvtrain {

class Communicator;

// The gradients the tensors have (a parameter that took no part in the step has none).
std::vector<at::Tensor> gradients_of(const std::vector<at::Tensor>& tensors);

// The norm of the gradients of `tensors` as a float device scalar (0 when none has a gradient);
// with `max_norm` > 0 they are scaled down to it in place. `shards_over`: the tensors are this
// rank's shards, and the norm sums their squares over its ranks (null: whole tensors).
at::Tensor clip_gradient_norm(const std::vector<at::Tensor>& tensors, double max_norm, const c10::Device& device,
                              Communicator* shards_over);

}  // namespace cvtrain
