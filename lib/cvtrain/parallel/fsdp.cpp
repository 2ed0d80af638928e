// Fully sharded data parallel (ZeRO stage 3, as PyTorch's FSDP): each rank keeps only its shard
// of every parameter. A unit (a residual block, or the root: everything outside the blocks) is
// all-gathered just before its forward and freed after it, gathered again when backward reaches
// it, and its gradients are reduce-scattered to the shards as soon as the last one is
// accumulated. As PyTorch's FSDP does, the next unit's all-gather is started while the current
// one computes (block i+1 in forward, block i-1 in backward), so at most two blocks (and the
// root) are whole at once. Parameters keep their identity: their storage is swapped in and out
// underneath (the tensors autograd saved see the same storage again in backward). Buffers
// (BatchNorm statistics) stay whole on every rank, in fp32, as does every parameter.
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/autograd.h>
#include <torch/nn/module.h>

#include "cvtrain/core/timer.h"
#include "cvtrain/comm/communicator.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/parallel/sharded.h"

namespace cvtrain {
namespace {

// One FlatShard's whole values, in a storage that exists only while the unit is gathered.
struct FullValues {
  at::Storage storage;
  at::Tensor flat;  // [padded] over `storage`
  size_t bytes = 0;
};

struct UnitState {
  std::vector<FullValues> values;  // one per shard of the unit
  bool gathered = false;           // storage in place; the all-gathers may still be in flight
  std::vector<std::unique_ptr<PendingCollective>> in_flight;
};

class FsdpStrategy : public ShardedStrategy, public BlockHooks {
 public:
  FsdpStrategy(Classifier& model, Communicator& comm) : ShardedStrategy(model, comm), state_(units_.size()) {
    for (size_t u = 0; u < units_.size(); ++u) place_parameters(u);
    for (size_t u = 0; u < units_.size(); ++u) release(u);
    reduce_gradients_during_backward();
    model_.set_block_hooks(this);
  }
  ~FsdpStrategy() override { model_.set_block_hooks(nullptr); }

  void before_forward() override {
    gather(root());
    if (root() > 0) start_gather(0);
  }
  void before_backward(bool) override {
    in_backward_ = true;
    start_backward();
  }
  void after_backward(bool) override {
    finish_backward();
    in_backward_ = false;
    if (!all_gathered_)
      for (size_t u = 0; u < units_.size(); ++u) release(u);
  }

  void gather_parameters() override {
    for (size_t u = 0; u < units_.size(); ++u) start_gather(u);
    for (auto& unit : state_) finish_gather(unit);
    all_gathered_ = true;
  }
  void release_parameters() override {
    all_gathered_ = false;
    for (size_t u = 0; u < units_.size(); ++u) release(u);
  }

  NamedTensors model_state() override {
    NamedTensors out;
    for (const auto& [name, tensor] : named_model_tensors(model_)) out.emplace_back(name, tensor.detach().clone());
    return out;
  }

  void load_model_state(const NamedTensors& saved, const std::string& source) override {
    gather_parameters();
    copy_by_name(saved, named_model_tensors(model_), source);
    torch::NoGradGuard no_grad;
    for (size_t u = 0; u < units_.size(); ++u)
      for (size_t s = 0; s < units_[u].size(); ++s) units_[u][s].shard().copy_(units_[u][s].part_of(state_[u].values[s].flat));
    release_parameters();
  }

  StateBytes state_bytes(torch::optim::Optimizer& optimizer) override {
    return StateBytes{shard_bytes(), optimizer_state_bytes(optimizer)};
  }

  // ---- BlockHooks: block b is unit b
  void before_block(size_t index) override {
    gather(index);
    // Not in backward, where activation checkpointing replays blocks in reverse order.
    if (!in_backward_ && index + 1 < root()) start_gather(index + 1);
  }
  at::Tensor after_block(size_t index, const at::Tensor& output) override {
    if (all_gathered_) return output;
    if (at::GradMode::is_enabled() && output.requires_grad())
      at::Tensor(output).register_hook([this, index](const at::Tensor&) {  // backward reaches the block
        gather(index);
        if (index > 0) start_gather(index - 1);
      });
    release(index);
    return output;
  }

 private:
  size_t root() const { return units_.size() - 1; }

  // Gives the unit's parameters storage of their own inside each shard's whole-values buffer.
  void place_parameters(size_t u) {
    torch::NoGradGuard no_grad;
    UnitState& unit = state_[u];
    for (size_t s = 0; s < units_[u].size(); ++s) {
      FlatShard& shard = units_[u][s];
      FullValues values;
      values.flat = shard.place_parameters();
      values.storage = values.flat.storage();
      values.bytes = static_cast<size_t>(values.flat.numel()) * values.flat.element_size();
      unit.values.push_back(std::move(values));
    }
    unit.gathered = true;
  }

  // Gives the unit its storage back and starts filling it; gather() waits for it.
  void start_gather(size_t u) {
    UnitState& unit = state_[u];
    if (unit.gathered) return;
    torch::NoGradGuard no_grad;
    for (size_t s = 0; s < units_[u].size(); ++s) {
      FullValues& values = unit.values[s];
      c10::StorageImpl* storage = values.storage.unsafeGetStorageImpl();
      storage->set_data_ptr_noswap(storage->allocator()->allocate(values.bytes));
      storage->set_nbytes(values.bytes);
      unit.in_flight.push_back(comm_.all_gather_async(values.flat, units_[u][s].shard().detach(),
                                                      fmt::format("all-gather of parameters (unit {} of {})", u + 1, units_.size())));
    }
    unit.gathered = true;
  }

  // The unit's whole parameters, ready to compute with.
  void gather(size_t u) {
    start_gather(u);
    finish_gather(state_[u]);
  }

  void finish_gather(UnitState& unit) {
    if (unit.in_flight.empty()) return;
    Stopwatch wait;
    for (auto& pending : unit.in_flight) pending->wait();
    unit.in_flight.clear();
    comm_wait_s_ += wait.seconds();
  }

  void release(size_t u) {
    UnitState& unit = state_[u];
    if (!unit.gathered || all_gathered_) return;
    finish_gather(unit);  // never free memory a collective is still writing
    for (FullValues& values : unit.values) {
      c10::StorageImpl* storage = values.storage.unsafeGetStorageImpl();
      storage->set_data_ptr_noswap(at::DataPtr(nullptr, values.flat.device()));
      storage->set_nbytes(0);
    }
    unit.gathered = false;
  }

  // A unit's gradients are reduced: backward is done with its parameters.
  void on_unit_reduced(size_t u) override { release(u); }

  std::vector<UnitState> state_;
  bool all_gathered_ = false;
  bool in_backward_ = false;
};

}  // namespace

std::unique_ptr<Strategy> make_fsdp(Classifier& model, Communicator& comm) { return std::make_unique<FsdpStrategy>(model, comm); }

}  // namespace cvtrain
