// ShardedStrategy: units, shards, and the optimizer state they hold.
#include "cvtrain/parallel/sharded.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/nn/module.h>

#include <map>
#include <set>

#include "cvtrain/core/timer.h"
#include "cvtrain/comm/communicator.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/parallel/replicated.h"

namespace cvtrain {
namespace {

using NamedParameters = std::vector<std::pair<std::string, at::Tensor>>;

// Each parameter's unit: the index of the block holding it, or blocks.size() for the root.
std::vector<NamedParameters> parameters_by_unit(Classifier& model) {
  std::map<const void*, size_t> unit_of;
  const auto& blocks = model.blocks();
  for (size_t b = 0; b < blocks.size(); ++b)
    for (const auto& p : blocks[b]->parameters()) unit_of.emplace(p.unsafeGetTensorImpl(), b);
  std::vector<NamedParameters> units(blocks.size() + 1);
  for (const auto& p : model.named_parameters()) {
    if (!p.value().requires_grad()) continue;
    const auto it = unit_of.find(p.value().unsafeGetTensorImpl());
    units[it == unit_of.end() ? blocks.size() : it->second].emplace_back(p.key(), p.value());
  }
  return units;
}

// Runs after a parameter's gradient was accumulated into .grad (where DDP's reducer hooks in too).
struct AccumulatedHook : torch::autograd::FunctionPostHook {
  AccumulatedHook(ShardedStrategy* strategy, size_t unit, size_t shard, size_t entry)
      : strategy(strategy), unit(unit), shard(shard), entry(entry) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    strategy->on_gradient_accumulated(unit, shard, entry);
    return outputs;
  }
  ShardedStrategy* strategy;
  size_t unit, shard, entry;
};

}  // namespace

ShardedStrategy::ShardedStrategy(Classifier& model, Communicator& comm) : model_(model), comm_(comm) {
  broadcast_from_rank0(model.parameters(), comm_);
  sync_buffers();
  for (const NamedParameters& unit : parameters_by_unit(model)) {
    NamedParameters decay, no_decay;
    for (const auto& [name, p] : unit) (decays(name, p) ? decay : no_decay).emplace_back(name, p);
    std::vector<FlatShard> shards;
    if (!decay.empty()) shards.emplace_back(std::move(decay), true, comm.rank(), comm.world_size());
    if (!no_decay.empty()) shards.emplace_back(std::move(no_decay), false, comm.rank(), comm.world_size());
    units_.push_back(std::move(shards));
  }
}

ParameterGroups ShardedStrategy::optimizer_parameters() {
  ParameterGroups groups;
  for (auto& unit : units_)
    for (auto& shard : unit) (shard.decay() ? groups.decay : groups.no_decay).push_back(shard.shard());
  return groups;
}

NamedTensors ShardedStrategy::optimizer_state(torch::optim::Optimizer& optimizer) {
  NamedTensors named;
  for (auto& unit : units_)
    for (auto& shard : unit)
      for (auto& item : shard.named_state(optimizer, comm_)) named.push_back(std::move(item));
  return named;
}

void ShardedStrategy::load_optimizer_state(torch::optim::Optimizer& optimizer, const NamedTensors& saved) {
  const std::map<std::string, at::Tensor> by_name(saved.begin(), saved.end());
  for (auto& unit : units_)
    for (auto& shard : unit) shard.load_state(optimizer, by_name);
}

void ShardedStrategy::sync_buffers() { broadcast_from_rank0(model_.buffers(), comm_); }

// The reduce-scatter runs while backward goes on; at most kMaxReductionsInFlight wait at once, so
// the whole gradients they hold never add up to the model's (zero2's and fsdp's point).
void ShardedStrategy::start_reduce_scatter(FlatShard& shard, at::Tensor flat) {
  torch::NoGradGuard no_grad;
  at::Tensor part = at::empty_like(shard.shard(), at::MemoryFormat::Contiguous).requires_grad_(false);
  auto pending = comm_.reduce_scatter_sum_async(part, flat, fmt::format("gradient reduce-scatter ({} parameters from '{}')",
                                                                        shard.entries().size(),
                                                                        shard.entries().empty() ? "" : shard.entries()[0].name));
  reductions_.push_back(Reduction{&shard, part, std::move(flat), std::move(pending)});
  while (reductions_.size() > kMaxReductionsInFlight) finish_oldest_reduction();
}

// shard.grad += its part of the sum / world size, in the order the reductions started.
void ShardedStrategy::finish_oldest_reduction() {
  Reduction r = std::move(reductions_.front());
  reductions_.pop_front();
  Stopwatch wait;
  r.pending->wait();
  comm_wait_s_ += wait.seconds();
  torch::NoGradGuard no_grad;
  r.part.div_(comm_.world_size());
  if (r.shard->shard().grad().defined())
    r.shard->shard().mutable_grad().add_(r.part);
  else
    r.shard->shard().mutable_grad() = r.part;
}

void ShardedStrategy::release_gradients(FlatShard& shard) {
  for (const auto& entry : shard.entries()) at::Tensor(entry.parameter).mutable_grad().reset();
}

void ShardedStrategy::reduce_gradients_during_backward() {
  gradients_.resize(units_.size());
  for (size_t u = 0; u < units_.size(); ++u) {
    gradients_[u].flat.resize(units_[u].size());
    for (size_t s = 0; s < units_[u].size(); ++s)
      for (size_t e = 0; e < units_[u][s].entries().size(); ++e) {
        accumulators_.push_back(torch::autograd::impl::grad_accumulator(units_[u][s].entries()[e].parameter));
        accumulators_.back()->add_post_hook(std::make_unique<AccumulatedHook>(this, u, s, e));
        ++gradients_[u].expected;
      }
  }
}

void ShardedStrategy::start_backward() {
  for (auto& unit : gradients_) unit.arrived = 0;
}

void ShardedStrategy::finish_backward() {
  for (size_t u = 0; u < gradients_.size(); ++u)
    if (gradients_[u].expected > 0 && gradients_[u].arrived < gradients_[u].expected) reduce_unit(u);
  while (!reductions_.empty()) finish_oldest_reduction();
}

void ShardedStrategy::on_gradient_accumulated(size_t u, size_t s, size_t e) {
  UnitGradients& unit = gradients_[u];
  FlatShard& shard = units_[u][s];
  at::Tensor parameter = shard.entries()[e].parameter;
  torch::NoGradGuard no_grad;
  if (!unit.flat[s].defined()) unit.flat[s] = at::zeros({shard.padded_numel()}, shard.shard().options().requires_grad(false));
  shard.view_of(unit.flat[s], e).copy_(parameter.grad());
  parameter.mutable_grad().reset();  // the whole gradient lives only in the flat buffer until reduce-scattered
  if (++unit.arrived == unit.expected) reduce_unit(u);
}

void ShardedStrategy::reduce_unit(size_t u) {
  UnitGradients& unit = gradients_[u];
  for (size_t s = 0; s < units_[u].size(); ++s) {
    FlatShard& shard = units_[u][s];
    if (!unit.flat[s].defined()) unit.flat[s] = at::zeros({shard.padded_numel()}, shard.shard().options().requires_grad(false));
    start_reduce_scatter(shard, std::move(unit.flat[s]));
    unit.flat[s] = at::Tensor();
  }
  unit.arrived = unit.expected;
  on_unit_reduced(u);
}

int64_t ShardedStrategy::shard_bytes() const {
  int64_t bytes = 0;
  for (const auto& unit : units_)
    for (const auto& shard : unit) bytes += shard.shard().numel() * static_cast<int64_t>(shard.shard().element_size());
  return bytes;
}

}  // namespace cvtrain
