// ZeRO stages 1 and 2 (Rajbhandari et al. 2020) over flat shards. Every rank keeps the whole
// model; the optimizer state exists only for this rank's shard of each unit, and after the step
// the updated shards are all-gathered into everyone's parameters.
#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include "cvtrain/comm/communicator.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/parallel/ddp_strategy.h"
#include "cvtrain/parallel/sharded.h"

namespace cvtrain {
namespace {

class ZeroStrategy : public ShardedStrategy {
 public:
  ZeroStrategy(int stage, Classifier& model, Communicator& comm, double bucket_mb) : ShardedStrategy(model, comm), stage_(stage) {
    // Parameters live in one flat buffer per shard, and the shard is this rank's slice of it.
    for (auto& unit : units_)
      for (auto& shard : unit) {
        flats_.push_back(shard.place_parameters());
        shard.share_shard_with(flats_.back());
      }
    // Stage 1 all-reduces whole gradients, overlapped with backward, exactly as ddp does; stage 2
    // reduce-scatters each unit's gradients as soon as backward has produced them.
    if (stage_ == 1)
      ddp_ = std::make_unique<DdpStrategy>(model, comm, bucket_mb);
    else
      reduce_gradients_during_backward();
  }

  void before_backward(bool last_micro_step) override {
    if (ddp_)
      ddp_->before_backward(last_micro_step);
    else
      start_backward();
  }

  // Stage 1: gradients accumulate locally over the micro-steps; the last one hands each shard its
  // part. Stage 2: every micro-step's gradients were reduce-scattered during its backward.
  void after_backward(bool last_micro_step) override {
    if (!ddp_) {
      finish_backward();
      return;
    }
    if (!last_micro_step) return;
    ddp_->after_backward(true);
    comm_wait_s_ += ddp_->take_comm_wait_seconds();
    torch::NoGradGuard no_grad;
    for (auto& unit : units_)
      for (auto& shard : unit) {
        shard.shard().mutable_grad() = shard.part_of_gradients();
        release_gradients(shard);  // the optimizer needs only the shard's part from here on
      }
  }

  // Every rank's updated slice into everyone's buffer: all started, then all awaited.
  void after_step() override {
    torch::NoGradGuard no_grad;
    std::vector<std::unique_ptr<PendingCollective>> in_flight;
    size_t i = 0;
    for (auto& unit : units_)
      for (auto& shard : unit)
        in_flight.push_back(comm_.all_gather_async(flats_[i++], shard.shard().detach().clone(), "all-gather of updated parameters"));
    for (auto& pending : in_flight) pending->wait();
  }

  void publish_optimizer_parameters() override { after_step(); }

  NamedTensors model_state() override { return detached_model_state(model_); }

  // The shards are views of the parameters' buffers, so they follow.
  void load_model_state(const NamedTensors& saved, const std::string& source) override {
    copy_by_name(saved, named_model_tensors(model_), source);
  }

  StateBytes state_bytes(torch::optim::Optimizer& optimizer) override {
    return StateBytes{parameter_bytes(model_), optimizer_state_bytes(optimizer)};
  }

 private:
  int stage_;
  std::unique_ptr<DdpStrategy> ddp_;
  std::vector<at::Tensor> flats_;  // one parameter buffer per shard, in units_ order
};

}  // namespace

std::unique_ptr<Strategy> make_zero(int stage, Classifier& model, Communicator& comm, double bucket_mb) {
  return std::make_unique<ZeroStrategy>(stage, model, comm, bucket_mb);
}

}  // namespace cvtrain
