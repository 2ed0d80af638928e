// FlatShard and the by-name state helpers every strategy shares.
#include "cvtrain/parallel/flat_shard.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "cvtrain/core/error.h"
#include "cvtrain/comm/communicator.h"
#include "cvtrain/optim/optimizer.h"

namespace cvtrain {

FlatShard::FlatShard(std::vector<std::pair<std::string, at::Tensor>> parameters, bool decay, int rank, int world)
    : decay_(decay), rank_(rank), world_(world) {
  int64_t offset = 0;
  for (auto& [name, parameter] : parameters) {
    entries_.push_back(Entry{name, parameter, offset});
    offset += parameter.numel();
  }
  shard_numel_ = (offset + world - 1) / world;
  padded_ = shard_numel_ * world;
  torch::NoGradGuard no_grad;
  const auto options = parameters.empty() ? at::TensorOptions().dtype(at::kFloat) : parameters.front().second.options();
  shard_ = part_of(flatten_parameters()).clone().to(options.dtype(at::kFloat)).set_requires_grad(true);
}

at::Tensor FlatShard::view_of(const at::Tensor& flat, size_t entry) const {
  const Entry& e = entries_[entry];
  // Dense parameters (contiguous or channels_last) fill numel() consecutive elements.
  return flat.as_strided(e.parameter.sizes(), e.parameter.strides(), flat.storage_offset() + e.offset);
}

at::Tensor FlatShard::flatten_parameters() const {
  torch::NoGradGuard no_grad;
  at::Tensor flat = at::zeros({padded_}, shard_.defined() ? shard_.options().requires_grad(false)
                                                          : entries_.empty() ? at::TensorOptions() : entries_[0].parameter.options());
  for (size_t i = 0; i < entries_.size(); ++i) view_of(flat, i).copy_(entries_[i].parameter.detach());
  return flat;
}

at::Tensor FlatShard::part_of_gradients() const {
  torch::NoGradGuard no_grad;
  at::Tensor part = at::zeros({shard_numel_}, shard_.options().requires_grad(false));
  const int64_t begin = rank_ * shard_numel_, end = begin + shard_numel_;
  for (const Entry& e : entries_) {
    const int64_t from = std::max(begin, e.offset), to = std::min(end, e.offset + e.parameter.numel());
    if (from >= to || !e.parameter.grad().defined()) continue;
    // The gradient in the parameter's memory order (its layout may differ, e.g. after ddp's buckets).
    const at::Tensor ordered = at::empty_strided(e.parameter.sizes(), e.parameter.strides(), part.options()).copy_(e.parameter.grad());
    part.narrow(0, from - begin, to - from).copy_(ordered.as_strided({e.parameter.numel()}, {1}).narrow(0, from - e.offset, to - from));
  }
  return part;
}

at::Tensor FlatShard::part_of(const at::Tensor& flat) const { return flat.narrow(0, rank_ * shard_numel_, shard_numel_); }

at::Tensor FlatShard::place_parameters() {
  torch::NoGradGuard no_grad;
  const at::Tensor flat = flatten_parameters();
  for (size_t i = 0; i < entries_.size(); ++i) {
    at::Tensor parameter = entries_[i].parameter;
    parameter.set_(flat.storage(), view_of(flat, i).storage_offset(), parameter.sizes(), parameter.strides());
  }
  return flat;
}

void FlatShard::share_shard_with(const at::Tensor& flat) {
  torch::NoGradGuard no_grad;
  shard_ = part_of(flat);
  shard_.requires_grad_(true);
}

NamedTensors FlatShard::named_state(torch::optim::Optimizer& optimizer, Communicator& comm) {
  NamedTensors named;
  for (const auto& [field, value] : optimizer_state_of(optimizer, shard_)) {
    if (value.dim() == 0) {  // a per-tensor counter (AdamW's step): the same for every parameter
      for (const auto& e : entries_) named.emplace_back(e.name + "/" + field, value.clone());
      continue;
    }
    at::Tensor full = at::empty({padded_}, value.options());
    comm.all_gather(full, value.contiguous(), fmt::format("all-gather of optimizer state '{}'", field));
    for (size_t i = 0; i < entries_.size(); ++i) named.emplace_back(entries_[i].name + "/" + field, view_of(full, i).contiguous());
  }
  return named;
}

void FlatShard::load_state(torch::optim::Optimizer& optimizer, const std::map<std::string, at::Tensor>& saved) {
  if (entries_.empty()) return;
  const std::string first = entries_[0].name + "/";
  StateFields fields;
  for (auto it = saved.lower_bound(first); it != saved.end() && it->first.rfind(first, 0) == 0; ++it) {
    const std::string field = it->first.substr(first.size());
    if (it->second.dim() == 0) {
      fields.emplace_back(field, it->second);
      continue;
    }
    at::Tensor full = at::zeros({padded_}, shard_.options().requires_grad(false));
    for (size_t i = 0; i < entries_.size(); ++i) {
      const auto found = saved.find(entries_[i].name + "/" + field);
      if (found == saved.end()) throw Error(fmt::format("optimizer state: no '{}/{}'", entries_[i].name, field));
      view_of(full, i).copy_(found->second.view(entries_[i].parameter.sizes()));
    }
    fields.emplace_back(field, part_of(full));
  }
  set_optimizer_state(optimizer, shard_, fields);
}

NamedTensors named_model_tensors(torch::nn::Module& model) {
  NamedTensors out;
  for (const auto& item : model.named_parameters(true)) out.emplace_back(item.key(), item.value());
  for (const auto& item : model.named_buffers(true)) out.emplace_back(item.key(), item.value());
  return out;
}

void copy_by_name(const NamedTensors& saved, const NamedTensors& targets, const std::string& source) {
  std::map<std::string, at::Tensor> remaining(saved.begin(), saved.end());
  torch::NoGradGuard no_grad;
  for (const auto& [name, target] : targets) {
    const auto it = remaining.find(name);
    if (it == remaining.end()) throw Error(fmt::format("{}: has no tensor '{}' (a checkpoint of another model?)", source, name));
    if (it->second.sizes() != target.sizes())
      throw Error(fmt::format("{}: '{}' has shape {} but the model's is {}", source, name, fmt::join(it->second.sizes(), "x"),
                              fmt::join(target.sizes(), "x")));
    at::Tensor(target).detach().copy_(it->second);
    remaining.erase(it);
  }
  if (!remaining.empty()) throw Error(fmt::format("{}: holds '{}', which the model does not have", source, remaining.begin()->first));
}

NamedTensors named_parameter_state(torch::optim::Optimizer& optimizer, torch::nn::Module& model) {
  NamedTensors named;
  for (const auto& p : model.named_parameters(true))
    for (const auto& [field, value] : optimizer_state_of(optimizer, p.value())) named.emplace_back(p.key() + "/" + field, value);
  return named;
}

void load_named_parameter_state(torch::optim::Optimizer& optimizer, torch::nn::Module& model, const NamedTensors& saved) {
  std::map<std::string, StateFields> by_parameter;
  for (const auto& [key, value] : saved) {
    const size_t slash = key.rfind('/');
    if (slash != std::string::npos) by_parameter[key.substr(0, slash)].emplace_back(key.substr(slash + 1), value);
  }
  for (const auto& p : model.named_parameters(true)) {
    const auto it = by_parameter.find(p.key());
    if (it != by_parameter.end()) set_optimizer_state(optimizer, p.value(), it->second);
  }
}

int64_t parameter_bytes(torch::nn::Module& model) {
  int64_t bytes = 0;
  for (const auto& p : model.parameters()) bytes += p.numel() * static_cast<int64_t>(p.element_size());
  return bytes;
}

NamedTensors detached_model_state(torch::nn::Module& model) {
  NamedTensors out;
  for (const auto& [name, tensor] : named_model_tensors(model)) out.emplace_back(name, tensor.detach());
  return out;
}

int64_t optimizer_state_bytes(torch::optim::Optimizer& optimizer) {
  int64_t bytes = 0;
  for (const auto& group : optimizer.param_groups())
    for (const auto& tensor : group.params())
      for (const auto& [field, value] : optimizer_state_of(optimizer, tensor))
        bytes += value.numel() * static_cast<int64_t>(value.element_size());
  return bytes;
}

}  // namespace cvtrain
