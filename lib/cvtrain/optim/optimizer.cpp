// SGD and AdamW updating as Python's torch.optim does, in two parameter groups: tensors of rank
// >= 2 (conv and linear weights) decay, the rest (norm weights, biases, layer scales) and ViT's
// position embedding and class token do not — timm's grouping, the standard recipe for both SGD
// and AdamW on vision models. State by named fields.
#include "cvtrain/optim/optimizer.h"

#include <ATen/ops/_foreach_add.h>
#include <ATen/ops/_foreach_addcdiv.h>
#include <ATen/ops/_foreach_addcmul.h>
#include <ATen/ops/_foreach_div.h>
#include <ATen/ops/_foreach_lerp.h>
#include <ATen/ops/_foreach_mul.h>
#include <ATen/ops/_foreach_sqrt.h>
#include <torch/nn/module.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <fmt/format.h>

#include <cmath>

#include "cvtrain/core/error.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {
namespace {

// The parameters of a group that have gradients, with their gradients. The tensors themselves
// (not detached copies, whose TensorImpl differs): the state is keyed by the parameter's.
struct Updated {
  std::vector<at::Tensor> params, grads;
};
Updated with_gradients(torch::optim::OptimizerParamGroup& group) {
  Updated updated;
  for (const at::Tensor& p : group.params())
    if (p.grad().defined()) {
      updated.params.push_back(p);
      updated.grads.push_back(p.grad());
    }
  return updated;
}

// A LibTorch optimizer whose step() is update() per parameter group, without autograd.
template <class Base>
class GroupwiseUpdate : public Base {
 public:
  using Base::Base;

  at::Tensor step(torch::optim::Optimizer::LossClosure closure = nullptr) override {
    at::Tensor loss;
    if (closure) {
      at::AutoGradMode enable_grad(true);
      loss = closure();
    }
    torch::NoGradGuard no_grad;
    for (auto& group : this->param_groups()) update(group);
    return loss;
  }

 protected:
  virtual void update(torch::optim::OptimizerParamGroup& group) = 0;
};

// LibTorch's AdamW and SGD state and options, with the update of Python's torch.optim: the
// multi-tensor ("foreach") path, which is its default on CUDA and computes the same elementwise
// expressions as its single-tensor path on the CPU. LibTorch's own AdamW differs (mul_ + add_
// where Python has lerp_) by an ulp, which early training turns into visible divergence, and
// launches a dozen kernels per parameter where these launch a dozen per group. With these, a run
// equals the Python training loop bit for bit (tests/parity/check_training.py).
class ForeachAdamW : public GroupwiseUpdate<torch::optim::AdamW> {
 public:
  using GroupwiseUpdate<torch::optim::AdamW>::GroupwiseUpdate;

 private:
  void update(torch::optim::OptimizerParamGroup& group) override {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
    if (options.amsgrad()) throw Error("AdamW: amsgrad is not supported");
    const auto [beta1, beta2] = options.betas();
    const double lr = options.lr();
    Updated u = with_gradients(group);
    if (u.params.empty()) return;
    std::vector<at::Tensor> exp_avgs, exp_avg_sqs;
    std::vector<at::Scalar> step_sizes, bias_correction2_sqrts;
    for (const at::Tensor& p : u.params) {
      torch::optim::AdamWParamState& s = state_of(p);
      s.step(s.step() + 1);
      exp_avgs.push_back(s.exp_avg());
      exp_avg_sqs.push_back(s.exp_avg_sq());
      const auto step = static_cast<double>(s.step());
      step_sizes.emplace_back((lr / (1 - std::pow(beta1, step))) * -1);
      bias_correction2_sqrts.emplace_back(std::pow(1 - std::pow(beta2, step), 0.5));
    }
    if (options.weight_decay() != 0) at::_foreach_mul_(u.params, 1 - lr * options.weight_decay());
    at::_foreach_lerp_(exp_avgs, u.grads, 1 - beta1);
    at::_foreach_mul_(exp_avg_sqs, beta2);
    at::_foreach_addcmul_(exp_avg_sqs, u.grads, u.grads, 1 - beta2);
    std::vector<at::Tensor> denominators = at::_foreach_sqrt(exp_avg_sqs);
    at::_foreach_div_(denominators, bias_correction2_sqrts);
    at::_foreach_add_(denominators, options.eps());
    at::_foreach_addcdiv_(u.params, exp_avgs, denominators, step_sizes);
  }

  torch::optim::AdamWParamState& state_of(const at::Tensor& p) {
    std::unique_ptr<torch::optim::OptimizerParamState>& slot = state()[p.unsafeGetTensorImpl()];
    if (!slot) {
      auto fresh = std::make_unique<torch::optim::AdamWParamState>();
      fresh->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
      fresh->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
      slot = std::move(fresh);
    }
    return static_cast<torch::optim::AdamWParamState&>(*slot);
  }
};

// SGD as torch.optim.SGD's multi-tensor path.
class ForeachSgd : public GroupwiseUpdate<torch::optim::SGD> {
 public:
  using GroupwiseUpdate<torch::optim::SGD>::GroupwiseUpdate;

 private:
  void update(torch::optim::OptimizerParamGroup& group) override {
    const auto& options = static_cast<const torch::optim::SGDOptions&>(group.options());
    Updated u = with_gradients(group);
    if (u.params.empty()) return;
    std::vector<at::Tensor> directions = u.grads;
    if (options.weight_decay() != 0) directions = at::_foreach_add(directions, u.params, options.weight_decay());
    if (options.momentum() != 0) directions = with_momentum(directions, u.params, options);
    at::_foreach_add_(u.params, directions, -options.lr());
  }

  // Updates the momentum buffers (a buffer starts as a copy of its first gradient) and returns
  // them, or for Nesterov the gradients plus momentum x buffers, added in place as Python does
  // (gradients are cleared before the next step anyway).
  std::vector<at::Tensor> with_momentum(std::vector<at::Tensor> grads, const std::vector<at::Tensor>& params,
                                        const torch::optim::SGDOptions& options) {
    std::vector<at::Tensor> buffers, continued, continued_grads;
    for (size_t i = 0; i < params.size(); ++i) {
      std::unique_ptr<torch::optim::OptimizerParamState>& slot = state()[params[i].unsafeGetTensorImpl()];
      if (!slot) {
        auto fresh = std::make_unique<torch::optim::SGDParamState>();
        fresh->momentum_buffer(grads[i].clone());
        slot = std::move(fresh);
      } else {
        continued.push_back(static_cast<torch::optim::SGDParamState&>(*slot).momentum_buffer());
        continued_grads.push_back(grads[i]);
      }
      buffers.push_back(static_cast<torch::optim::SGDParamState&>(*slot).momentum_buffer());
    }
    if (!continued.empty()) {
      at::_foreach_mul_(continued, options.momentum());
      at::_foreach_add_(continued, continued_grads, 1 - options.dampening());
    }
    if (!options.nesterov()) return buffers;
    at::_foreach_add_(grads, buffers, options.momentum());
    return grads;
  }
};

}  // namespace

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
  if (spec.name == OptimizerKind::kAdamw) {
    auto options = [&](double wd) {
      return std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(spec.lr)
                                                              .betas({spec.betas.at(0), spec.betas.at(1)})
                                                              .eps(spec.eps)
                                                              .weight_decay(wd));
    };
    std::vector<torch::optim::OptimizerParamGroup> groups{{decay, options(spec.weight_decay)}, {no_decay, options(0.0)}};
    return std::make_unique<ForeachAdamW>(groups, torch::optim::AdamWOptions(spec.lr));
  }
  auto options = [&](double wd) {
    return std::make_unique<torch::optim::SGDOptions>(
        torch::optim::SGDOptions(spec.lr).momentum(spec.momentum).nesterov(spec.nesterov).weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups{{decay, options(spec.weight_decay)}, {no_decay, options(0.0)}};
  return std::make_unique<ForeachSgd>(groups, torch::optim::SGDOptions(spec.lr));
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
