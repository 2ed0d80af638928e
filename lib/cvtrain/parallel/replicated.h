// Strategies whose every rank holds the whole model and optimizer: single and ddp. DDP groups
// gradients into buckets (reverse registration order, roughly the order backward produces them);
// a tensor hook copies each gradient into its bucket and the bucket's all-reduce starts as soon
// as its last gradient arrives, while backward goes on. zero1 reuses it for its gradients.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <mutex>
#include <vector>

#include "cvtrain/dist/communicator.h"
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

class DdpStrategy : public ReplicatedStrategy {
 public:
  DdpStrategy(torch::nn::Module& model, Communicator& comm, double bucket_mb);
  void before_backward(bool last_micro_step) override;
  void after_backward(bool last_micro_step) override;
  void sync_buffers() override;
  double take_comm_wait_seconds() override { return std::exchange(comm_wait_s_, 0.0); }

 private:
  struct Bucket {
    std::vector<size_t> params;  // indices into params_
    std::vector<int64_t> offsets;
    at::Tensor flat;
    size_t ready = 0;
    std::unique_ptr<PendingCollective> pending;
  };
  void build_buckets(int64_t bucket_bytes);
  void on_gradient(size_t index, const at::Tensor& grad);
  void launch_incomplete(Bucket& bucket);
  at::Tensor slot(const Bucket& bucket, size_t k) const;
  std::string bucket_name(size_t b) const;

  Communicator& comm_;
  std::vector<at::Tensor> params_;
  std::vector<std::pair<size_t, size_t>> bucket_of_;  // param -> (bucket, position)
  std::vector<Bucket> buckets_;
  std::vector<bool> arrived_;
  bool syncing_ = false;
  double comm_wait_s_ = 0;
  std::mutex mutex_;
};

// Every rank takes rank 0's values.
void broadcast_from_rank0(const std::vector<at::Tensor>& tensors, Communicator& comm);

}  // namespace cvtrain
