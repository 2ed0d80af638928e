// Two parameter groups: tensors of rank >= 2 (conv and linear weights) decay, the rest (norm
// weights, biases, layer scales) and ViT's position embedding and class token do not — timm's
// grouping, the standard recipe for both SGD and AdamW on vision models. State by named fields.
#include "cvtrain/optim/optimizer.h"

#include <torch/nn/module.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <fmt/format.h>

#include "cvtrain/core/error.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

bool decays(const std::string& name, const at::Tensor& parameter) {
  return parameter.dim() >= 2 && name != "pos_embed" && name != "cls_token";
}

ParameterGroups parameter_groups(torch::nn::Module& model) {
  ParameterGroups groups;
  for (const auto& p : model.named_parameters())
    if (p.value().requires_grad()) (decays(p.key(), p.value()) ? groups.decay : groups.no_decay).push_back(p.value());
  return groups;
}

std::unique_ptr<torch::optim::Optimizer> build_optimizer(const OptimSpec& spec, torch::nn::Module& model) {
  return build_optimizer(spec, parameter_groups(model));
}

std::unique_ptr<torch::optim::Optimizer> build_optimizer(const OptimSpec& spec, const ParameterGroups& parameters) {
  const std::vector<at::Tensor>&decay = parameters.decay, &no_decay = parameters.no_decay;
  if (spec.name == "adamw") {
    auto options = [&](double wd) {
      return std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(spec.lr)
                                                              .betas({spec.betas.at(0), spec.betas.at(1)})
                                                              .eps(spec.eps)
                                                              .weight_decay(wd));
    };
    std::vector<torch::optim::OptimizerParamGroup> groups{{decay, options(spec.weight_decay)}, {no_decay, options(0.0)}};
    return std::make_unique<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(spec.lr));
  }
  auto options = [&](double wd) {
    return std::make_unique<torch::optim::SGDOptions>(
        torch::optim::SGDOptions(spec.lr).momentum(spec.momentum).nesterov(spec.nesterov).weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups{{decay, options(spec.weight_decay)}, {no_decay, options(0.0)}};
  return std::make_unique<torch::optim::SGD>(groups, torch::optim::SGDOptions(spec.lr));
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

StateFields optimizer_state_of(torch::optim::Optimizer& optimizer, const at::Tensor& tensor) {
  const auto it = optimizer.state().find(tensor.unsafeGetTensorImpl());
  if (it == optimizer.state().end()) return {};
  if (const auto* adamw = dynamic_cast<const torch::optim::AdamWParamState*>(it->second.get()))
    return {{"step", at::scalar_tensor(adamw->step(), at::kLong)}, {"exp_avg", adamw->exp_avg()}, {"exp_avg_sq", adamw->exp_avg_sq()}};
  if (const auto* sgd = dynamic_cast<const torch::optim::SGDParamState*>(it->second.get())) {
    if (!sgd->momentum_buffer().defined()) return {};  // SGD without momentum keeps nothing
    return {{"momentum_buffer", sgd->momentum_buffer()}};
  }
  throw Error("optimizer state of an unknown kind (neither AdamW nor SGD)");
}

namespace {

at::Tensor field(const StateFields& fields, const std::string& name, const at::Tensor& like) {
  for (const auto& [key, value] : fields)
    if (key == name) return at::empty_like(like).copy_(value.view_as(like));
  throw Error(fmt::format("optimizer state: no '{}'", name));
}

}  // namespace

void set_optimizer_state(torch::optim::Optimizer& optimizer, const at::Tensor& tensor, const StateFields& fields) {
  if (fields.empty()) return;
  torch::NoGradGuard no_grad;
  const at::Tensor like = tensor.detach();
  if (dynamic_cast<torch::optim::AdamW*>(&optimizer)) {
    auto state = std::make_unique<torch::optim::AdamWParamState>();
    for (const auto& [key, value] : fields)
      if (key == "step") state->step(value.item<int64_t>());
    state->exp_avg(field(fields, "exp_avg", like));
    state->exp_avg_sq(field(fields, "exp_avg_sq", like));
    optimizer.state()[tensor.unsafeGetTensorImpl()] = std::move(state);
    return;
  }
  auto state = std::make_unique<torch::optim::SGDParamState>();
  state->momentum_buffer(field(fields, "momentum_buffer", like));
  optimizer.state()[tensor.unsafeGetTensorImpl()] = std::move(state);
}

}  // namespace cvtrain
