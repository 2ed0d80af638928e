// ddp: every rank holds the whole model; gradients are grouped into buckets (reverse registration
// order, roughly the order backward produces them), a tensor hook copies each gradient into its
// bucket, and the bucket's all-reduce starts as soon as its last gradient arrives, while backward
// goes on. zero1 reuses it for its gradients.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "cvtrain/comm/communicator.h"
#include "cvtrain/parallel/replicated.h"

namespace cvtrain {

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

}  // namespace cvtrain
