// One foreach lerp per update over every floating tensor (timm's own kernel), integer buffers
// copied; nothing reads back to the host, so the update never waits for the GPU.
#include "cvtrain/train/weight_ema.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/nn/module.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>

#include "cvtrain/core/error.h"
#include "cvtrain/dist/communicator.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

WeightEma::WeightEma(const EmaSpec& spec, torch::nn::Module& model) : decay_(spec.decay), warmup_(spec.warmup), every_steps_(spec.every_steps) {
  torch::NoGradGuard no_grad;
  const auto add = [&](const std::string& name, const at::Tensor& tensor, bool buffer) {
    at::Tensor copy = tensor.is_floating_point() ? tensor.detach().to(at::kFloat, /*non_blocking=*/false, /*copy=*/true) : tensor.detach().clone();
    entries_.push_back(Entry{name, tensor, copy, buffer});
  };
  for (const auto& item : model.named_parameters(/*recurse=*/true)) add(item.key(), item.value(), false);
  for (const auto& item : model.named_buffers(/*recurse=*/true)) add(item.key(), item.value(), true);
  for (const Entry& e : entries_)
    if (e.ema.is_floating_point()) {
      ema_floats_.push_back(e.ema);
      model_floats_.push_back(e.model);
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
  for (const Entry& e : entries_)
    if (!e.ema.is_floating_point()) e.ema.copy_(e.model);
  if (model_floats_.front().scalar_type() == at::kFloat) {
    at::_foreach_lerp_(ema_floats_, model_floats_, 1.0 - decay);
  } else {  // a model kept in another dtype: averaged in fp32 all the same
    std::vector<at::Tensor> as_float;
    for (const at::Tensor& t : model_floats_) as_float.push_back(t.to(at::kFloat));
    at::_foreach_lerp_(ema_floats_, as_float, 1.0 - decay);
  }
}

NamedTensors WeightEma::synced_state(Communicator& comm) {
  sync_buffers(comm);
  return state();
}

bool WeightEma::restore(const NamedTensors& saved, const std::string& source) {
  if (saved.empty()) {
    copy_model();
    return false;
  }
  load(saved, source);
  return true;
}

void WeightEma::copy_model() {
  torch::NoGradGuard no_grad;
  for (Entry& e : entries_) e.ema.copy_(e.model);
}

NamedTensors WeightEma::state() const {
  NamedTensors out;
  for (const Entry& e : entries_) out.emplace_back(e.name, e.ema);
  return out;
}

void WeightEma::load(const NamedTensors& saved, const std::string& source) {
  torch::NoGradGuard no_grad;
  for (Entry& e : entries_) {
    const auto it = std::find_if(saved.begin(), saved.end(), [&](const auto& item) { return item.first == e.name; });
    if (it == saved.end()) throw Error(fmt::format("{}: the weight average has no tensor '{}'", source, e.name));
    if (it->second.sizes() != e.ema.sizes())
      throw Error(fmt::format("{}: '{}' of the weight average has shape {}, the model {}", source, e.name, fmt::join(it->second.sizes(), "x"),
                              fmt::join(e.ema.sizes(), "x")));
    e.ema.copy_(it->second);
  }
}

void WeightEma::sync_buffers(Communicator& comm) {
  if (comm.world_size() == 1) return;
  for (Entry& e : entries_)
    if (e.buffer) comm.broadcast(e.ema, 0, "weight average buffers broadcast");
}

void WeightEma::swap_with_model() {
  torch::NoGradGuard no_grad;
  for (Entry& e : entries_) {
    const at::Tensor held = e.model.clone();
    e.model.copy_(e.ema);
    e.ema.copy_(held);
  }
}

}  // namespace cvtrain
