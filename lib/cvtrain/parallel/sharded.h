// What zero1, zero2 and fsdp share: the model's parameters cut into units (each residual block,
// and the root: everything outside the blocks), each unit into a weight-decay and a no-decay
// FlatShard; the optimizer updates only this rank's shards.
#pragma once

#include <deque>
#include <memory>
#include <vector>

namespace torch::autograd {
struct Node;
}

#include "cvtrain/comm/communicator.h"
#include "cvtrain/parallel/flat_shard.h"
#include "cvtrain/parallel/strategy.h"

namespace cvtrain {

class ShardedStrategy : public Strategy {
 public:
  // Broadcasts rank 0's parameters and buffers, then cuts the units.
  ShardedStrategy(Classifier& model, Communicator& comm);

  ParameterGroups optimizer_parameters() override;
  bool gradients_sharded() const override { return true; }
  NamedTensors optimizer_state(torch::optim::Optimizer& optimizer) override;
  void load_optimizer_state(torch::optim::Optimizer& optimizer, const NamedTensors& saved) override;
  void sync_buffers() override;
  double take_comm_wait_seconds() override { return std::exchange(comm_wait_s_, 0.0); }

 protected:
  void release_gradients(FlatShard& shard);
  int64_t shard_bytes() const;

  // Gradients leave during backward (zero2, fsdp): hooks on the parameters' gradient accumulators
  // copy each accumulated gradient into its unit's flat buffer and drop it; when a unit's last one
  // is in, the buffer is reduce-scattered into the shards' gradients (every micro-step, adding up).
  void reduce_gradients_during_backward();
  void start_backward();   // before each micro-step's backward
  void finish_backward();  // after it: units that got no gradient contribute zeros; reductions done
  virtual void on_unit_reduced(size_t /*unit*/) {}

 public:
  void on_gradient_accumulated(size_t unit, size_t shard, size_t entry);  // called by the hooks

  Classifier& model_;
  Communicator& comm_;
  std::vector<std::vector<FlatShard>> units_;  // units_[b]: block b's shards; units_.back(): the root's
  double comm_wait_s_ = 0;

 private:
  void reduce_unit(size_t unit);
  // shard.grad (+)= this rank's part of `flat` (padded_numel() gradients) summed over ranks,
  // divided by the world size: started now, added by finish_oldest_reduction().
  void start_reduce_scatter(FlatShard& shard, at::Tensor flat);
  void finish_oldest_reduction();
  struct Reduction {
    FlatShard* shard;
    at::Tensor part;  // this rank's part of the sum, once done
    at::Tensor flat;  // the whole gradients, alive while the collective reads them
    std::unique_ptr<PendingCollective> pending;
  };
  static constexpr size_t kMaxReductionsInFlight = 4;  // about two units (decay and no-decay shards)
  std::deque<Reduction> reductions_;
  struct UnitGradients {
    std::vector<at::Tensor> flat;  // one per shard of the unit, while its backward is under way
    size_t expected = 0, arrived = 0;
  };
  std::vector<UnitGradients> gradients_;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;  // kept alive so their hooks stay
};

// stage 1: gradients all-reduced (ddp's buckets), optimizer state sharded; stage 2: gradients
// reduce-scattered after backward as well.
std::unique_ptr<Strategy> make_zero(int stage, Classifier& model, Communicator& comm, double bucket_mb);
std::unique_ptr<Strategy> make_fsdp(Classifier& model, Communicator& comm);

}  // namespace cvtrain
