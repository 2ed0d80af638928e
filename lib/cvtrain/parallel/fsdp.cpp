// Fully sharded data parallel (ZeRO stage 3, as PyTorch's FSDP): each rank keeps only its shard
// of every parameter. A unit (a residual block, or the root: everything outside the blocks) is
// all-gathered just before its forward and freed after it, gathered again when backward reaches
// it, and its gradients are reduce-scattered to the shards as soon as the last one is
// accumulated. Parameters keep their identity: their storage is swapped in and out underneath
// (the tensors autograd saved see the same storage again in backward). Buffers (BatchNorm
// statistics) stay whole on every rank, in fp32, as does every parameter.
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/autograd.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/nn/module.h>

#include "cvtrain/core/timer.h"
#include "cvtrain/dist/communicator.h"
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
  std::vector<at::Tensor> grads;   // flat gradients collected during this backward, one per shard
  bool gathered = false;
  size_t expected = 0, arrived = 0;  // parameter gradients per backward
};

class FsdpStrategy;

// Runs after a parameter's gradient was accumulated into .grad (as DDP's reducer hooks in).
struct AccumulatedHook : torch::autograd::FunctionPostHook {
  AccumulatedHook(FsdpStrategy* strategy, size_t unit, size_t shard, size_t entry)
      : strategy(strategy), unit(unit), shard(shard), entry(entry) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& inputs) override;
  FsdpStrategy* strategy;
  size_t unit, shard, entry;
};

class FsdpStrategy : public ShardedStrategy, public BlockHooks {
 public:
  FsdpStrategy(Classifier& model, Communicator& comm) : ShardedStrategy(model, comm), state_(units_.size()) {
    for (size_t u = 0; u < units_.size(); ++u) place_parameters(u);
    for (size_t u = 0; u < units_.size(); ++u) release(u);
    model_.set_block_hooks(this);
  }
  ~FsdpStrategy() override { model_.set_block_hooks(nullptr); }

  void before_forward() override { gather(root()); }
  void before_backward(bool) override {
    for (auto& unit : state_) unit.arrived = 0;
  }
  // Units whose parameters got no gradient in this backward still take part, with zeros.
  void after_backward(bool) override {
    for (size_t u = 0; u < units_.size(); ++u)
      if (state_[u].expected > 0 && state_[u].arrived < state_[u].expected) finish_backward(u);
    if (!all_gathered_)
      for (size_t u = 0; u < units_.size(); ++u) release(u);
  }

  void gather_parameters() override {
    for (size_t u = 0; u < units_.size(); ++u) gather(u);
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
  void before_block(size_t index) override { gather(index); }
  at::Tensor after_block(size_t index, const at::Tensor& output) override {
    if (all_gathered_) return output;
    if (at::GradMode::is_enabled() && output.requires_grad())
      at::Tensor(output).register_hook([this, index](const at::Tensor&) { gather(index); });  // backward reaches the block
    release(index);
    return output;
  }

  void on_accumulated(size_t u, size_t s, size_t e) {
    UnitState& unit = state_[u];
    FlatShard& shard = units_[u][s];
    at::Tensor parameter = shard.entries()[e].parameter;
    torch::NoGradGuard no_grad;
    if (!unit.grads[s].defined()) unit.grads[s] = at::zeros({shard.padded_numel()}, shard.shard().options().requires_grad(false));
    shard.view_of(unit.grads[s], e).copy_(parameter.grad());
    parameter.mutable_grad().reset();  // the whole gradient lives only in the flat buffer until reduce-scattered
    if (++unit.arrived == unit.expected) finish_backward(u);
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
      for (size_t e = 0; e < shard.entries().size(); ++e) {
        at::Tensor parameter = shard.entries()[e].parameter;
        accumulators_.push_back(torch::autograd::impl::grad_accumulator(parameter));
        accumulators_.back()->add_post_hook(std::make_unique<AccumulatedHook>(this, u, s, e));
        ++unit.expected;
      }
      unit.values.push_back(std::move(values));
      unit.grads.emplace_back();
    }
    unit.gathered = true;
  }

  void gather(size_t u) {
    UnitState& unit = state_[u];
    if (unit.gathered) return;
    torch::NoGradGuard no_grad;
    for (size_t s = 0; s < units_[u].size(); ++s) {
      FullValues& values = unit.values[s];
      c10::StorageImpl* storage = values.storage.unsafeGetStorageImpl();
      storage->set_data_ptr_noswap(storage->allocator()->allocate(values.bytes));
      storage->set_nbytes(values.bytes);
      Stopwatch wait;
      comm_.all_gather(values.flat, units_[u][s].shard().detach(), fmt::format("all-gather of parameters (unit {} of {})", u + 1, units_.size()));
      comm_wait_s_ += wait.seconds();
    }
    unit.gathered = true;
  }

  void release(size_t u) {
    UnitState& unit = state_[u];
    if (!unit.gathered || all_gathered_) return;
    for (FullValues& values : unit.values) {
      c10::StorageImpl* storage = values.storage.unsafeGetStorageImpl();
      storage->set_data_ptr_noswap(at::DataPtr(nullptr, values.flat.device()));
      storage->set_nbytes(0);
    }
    unit.gathered = false;
  }

  void finish_backward(size_t u) {
    UnitState& unit = state_[u];
    for (size_t s = 0; s < units_[u].size(); ++s) {
      FlatShard& shard = units_[u][s];
      if (!unit.grads[s].defined()) unit.grads[s] = at::zeros({shard.padded_numel()}, shard.shard().options().requires_grad(false));
      reduce_scatter_flat(shard, unit.grads[s], /*accumulate=*/true);
      unit.grads[s] = at::Tensor();
    }
    unit.arrived = unit.expected;
    release(u);
  }

  std::vector<UnitState> state_;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;  // kept alive so the hooks stay
  bool all_gathered_ = false;
};

torch::autograd::variable_list AccumulatedHook::operator()(const torch::autograd::variable_list& outputs,
                                                           const torch::autograd::variable_list&) {
  strategy->on_accumulated(unit, shard, entry);
  return outputs;
}

}  // namespace

std::unique_ptr<Strategy> make_fsdp(Classifier& model, Communicator& comm) { return std::make_unique<FsdpStrategy>(model, comm); }

}  // namespace cvtrain
