// Checkpoint state and memory of strategies whose ranks hold the whole model, by parameter name.
#include "cvtrain/parallel/replicated.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/utils.h>

#include "cvtrain/comm/communicator.h"
#include "cvtrain/parallel/flat_shard.h"

namespace cvtrain {

NamedTensors ReplicatedStrategy::model_state() { return detached_model_state(model_); }

void ReplicatedStrategy::load_model_state(const NamedTensors& saved, const std::string& source) {
  copy_by_name(saved, named_model_tensors(model_), source);
}

NamedTensors ReplicatedStrategy::optimizer_state(torch::optim::Optimizer& optimizer) { return named_parameter_state(optimizer, model_); }

void ReplicatedStrategy::load_optimizer_state(torch::optim::Optimizer& optimizer, const NamedTensors& saved) {
  load_named_parameter_state(optimizer, model_, saved);
}

StateBytes ReplicatedStrategy::state_bytes(torch::optim::Optimizer& optimizer) {
  return StateBytes{parameter_bytes(model_), optimizer_state_bytes(optimizer)};
}

void broadcast_from_rank0(const std::vector<at::Tensor>& tensors, Communicator& comm) {
  torch::NoGradGuard no_grad;
  for (at::Tensor t : tensors) comm.broadcast(t, 0, "broadcast of parameters and buffers from rank 0");
}

}  // namespace cvtrain
