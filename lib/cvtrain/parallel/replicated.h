// Strategies whose every rank holds the whole model and optimizer: their shared checkpoint state
// and memory report, and single (one process, nothing to share). ddp is in ddp_strategy.h.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "cvtrain/comm/communicator.h"
#include "cvtrain/parallel/strategy.h"

namespace cvtrain {

// Checkpoint state and memory of a model and optimizer that every rank holds whole.
class ReplicatedStrategy : public Strategy {
 public:
  explicit ReplicatedStrategy(torch::nn::Module& model) : model_(model) {}
  ParameterGroups optimizer_parameters() override { return parameter_groups(model_); }
  NamedTensors model_state() override;
  void load_model_state(const NamedTensors& saved, const std::string& source) override;
  NamedTensors optimizer_state(torch::optim::Optimizer& optimizer) override;
  void load_optimizer_state(torch::optim::Optimizer& optimizer, const NamedTensors& saved) override;
  StateBytes state_bytes(torch::optim::Optimizer& optimizer) override;

 protected:
  torch::nn::Module& model_;
};

class SingleStrategy : public ReplicatedStrategy {
 public:
  using ReplicatedStrategy::ReplicatedStrategy;
  void before_backward(bool) override {}
  void after_backward(bool) override {}
  void sync_buffers() override {}
  double take_comm_wait_seconds() override { return 0; }
};

// Every rank takes rank 0's values.
void broadcast_from_rank0(const std::vector<at::Tensor>& tensors, Communicator& comm);

}  // namespace cvtrain
