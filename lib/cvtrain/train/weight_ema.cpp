// One foreach lerp per update over every floating tensor (timm's own kernel), integer buffers
// copied; nothing reads back to the host, so the update never waits for the GPU. The named, whole
// form (checkpoints) goes through the strategy: the average is put in the live tensors' place and
// the strategy's own model_state / load_model_state does the gathering and cutting.
#include "cvtrain/train/weight_ema.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/nn/module.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>

#include "cvtrain/core/error.h"
#include "cvtrain/comm/communicator.h"
#include "cvtrain/parallel/strategy.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {
namespace {

at::Tensor average_copy(const at::Tensor& tensor) {
  return tensor.is_floating_point() ? tensor.detach().to(at::kFloat, /*non_blocking=*/false, /*copy=*/true) : tensor.detach().clone();
}

}  // namespace

WeightEma::WeightEma(const EmaSpec& spec, Strategy& strategy, torch::nn::Module& model)
    : strategy_(strategy), decay_(spec.decay), warmup_(spec.warmup), every_steps_(spec.every_steps) {
  torch::NoGradGuard no_grad;
  const ParameterGroups groups = strategy.optimizer_parameters();
  for (const auto* group : {&groups.decay, &groups.no_decay})
    for (const at::Tensor& t : *group) trained_.push_back(Pair{t, average_copy(t)});
  for (const auto& item : model.named_buffers(/*recurse=*/true)) {
    buffers_.push_back(Pair{item.value(), average_copy(item.value())});
    buffer_names_.push_back(item.key());
  }
  for (const auto* pairs : {&trained_, &buffers_})
    for (const Pair& p : *pairs)
      if (p.ema.is_floating_point()) {
        ema_floats_.push_back(p.ema);
        live_floats_.push_back(p.live);
      }
}

double WeightEma::decay_at(int64_t step) const {
  const double since = static_cast<double>(std::max<int64_t>(0, step - 1));  // update_after_step 0
  if (since <= 0) return 0.0;
  if (!warmup_) return decay_;
  const double warm = 1.0 - std::pow(1.0 + since, -2.0 / 3.0);  // warmup_gamma 1, warmup_power 2/3
  return std::max(std::min(warm, decay_), 0.0);
}

void WeightEma::update(int64_t step) {
  if (every_steps_ > 1 && step % every_steps_ != 0 && step != 1) return;
  torch::NoGradGuard no_grad;
  const double decay = decay_at(step);
  for (const Pair& b : buffers_)
    if (!b.ema.is_floating_point()) b.ema.copy_(b.live);
  if (live_floats_.front().scalar_type() == at::kFloat) {
    at::_foreach_lerp_(ema_floats_, live_floats_, 1.0 - decay);
  } else {  // a model kept in another dtype: averaged in fp32 all the same
    std::vector<at::Tensor> as_float;
    for (const at::Tensor& t : live_floats_) as_float.push_back(t.to(at::kFloat));
    at::_foreach_lerp_(ema_floats_, as_float, 1.0 - decay);
  }
}

NamedTensors WeightEma::synced_state(Communicator& comm) {
  sync_buffers(comm);
  swap_with_model();
  strategy_.gather_parameters();
  NamedTensors state = strategy_.model_state();
  for (auto& [name, tensor] : state) tensor = average_copy(tensor);  // fp32, and no longer the live tensors
  strategy_.release_parameters();
  swap_with_model();
  return state;
}

bool WeightEma::restore(const NamedTensors& saved, const std::string& source) {
  if (saved.empty()) {
    copy_live();
    return false;
  }
  torch::NoGradGuard no_grad;
  // The strategy cuts the saved average into the live tensors; the raw values are kept aside and
  // put back. The model's own buffers stay: the average's go straight into the average.
  std::vector<at::Tensor> raw;
  for (const Pair& p : trained_) raw.push_back(p.live.detach().clone());
  NamedTensors for_strategy;
  for (const auto& [name, tensor] : saved) {
    const auto buffer = std::find(buffer_names_.begin(), buffer_names_.end(), name);
    if (buffer == buffer_names_.end()) {
      for_strategy.emplace_back(name, tensor);
      continue;
    }
    const at::Tensor& target = buffers_[static_cast<size_t>(buffer - buffer_names_.begin())].ema;
    if (tensor.sizes() != target.sizes())
      throw Error(fmt::format("{}: '{}' of the weight average has shape {}, the model {}", source, name, fmt::join(tensor.sizes(), "x"),
                              fmt::join(target.sizes(), "x")));
    target.copy_(tensor);
  }
  for (size_t i = 0; i < buffers_.size(); ++i)
    if (std::none_of(saved.begin(), saved.end(), [&](const auto& item) { return item.first == buffer_names_[i]; }))
      throw Error(fmt::format("{}: the weight average has no tensor '{}'", source, buffer_names_[i]));
  for (size_t i = 0; i < buffers_.size(); ++i) for_strategy.emplace_back(buffer_names_[i], buffers_[i].live.detach().clone());
  strategy_.load_model_state(for_strategy, source);
  for (size_t i = 0; i < trained_.size(); ++i) {
    trained_[i].ema.copy_(trained_[i].live);
    trained_[i].live.copy_(raw[i]);
  }
  strategy_.publish_optimizer_parameters();
  return true;
}

void WeightEma::copy_live() {
  torch::NoGradGuard no_grad;
  for (const auto* pairs : {&trained_, &buffers_})
    for (const Pair& p : *pairs) p.ema.copy_(p.live);
}

void WeightEma::sync_buffers(Communicator& comm) {
  if (comm.world_size() == 1) return;
  for (Pair& b : buffers_) comm.broadcast(b.ema, 0, "weight average buffers broadcast");
}

void WeightEma::swap_with_model() {
  torch::NoGradGuard no_grad;
  for (const auto* pairs : {&trained_, &buffers_})
    for (const Pair& p : *pairs) {
      const at::Tensor held = p.live.clone();
      p.live.copy_(p.ema);
      p.ema.copy_(held);
    }
  strategy_.publish_optimizer_parameters();
}

}  // namespace cvtrain
