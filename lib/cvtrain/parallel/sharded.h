// What zero1, zero2 and fsdp share: the model's parameters cut into units (each residual block,
// and the root: everything outside the blocks), each unit into a weight-decay and a no-decay
// FlatShard; the optimizer updates only this rank's shards.
#pragma once

#include <memory>
#include <vector>

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
  // shard.grad (+)= this rank's part of the gradients summed over ranks, divided by the world size.
  void reduce_scatter_gradients(FlatShard& shard, bool accumulate);
  // The same from a flat gradient of padded_numel() elements.
  void reduce_scatter_flat(FlatShard& shard, const at::Tensor& flat, bool accumulate);
  void release_gradients(FlatShard& shard);
  int64_t shard_bytes() const;

  Classifier& model_;
  Communicator& comm_;
  std::vector<std::vector<FlatShard>> units_;  // units_[b]: block b's shards; units_.back(): the root's
  double comm_wait_s_ = 0;
};

// stage 1: gradients all-reduced (ddp's buckets), optimizer state sharded; stage 2: gradients
// reduce-scattered after backward as well.
std::unique_ptr<Strategy> make_zero(int stage, Classifier& model, Communicator& comm, double bucket_mb);
std::unique_ptr<Strategy> make_fsdp(Classifier& model, Communicator& comm);

}  // namespace cvtrain
