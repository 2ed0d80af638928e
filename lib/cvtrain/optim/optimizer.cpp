// SGD and AdamW updating as Python's torch.optim does, LAMB and LARS as timm's, in two parameter
// groups: tensors of rank >= 2 (conv and linear weights) decay, the rest (norm weights, biases,
// layer scales) and ViT's position embedding and class token do not — timm's grouping, the
// standard recipe on vision models; for LAMB and LARS the group without decay also takes no trust
// ratio (timm's always_adapt off, MLPerf's exclusion of norms and biases). State by named fields.
#include "cvtrain/optim/optimizer.h"

#include <ATen/ops/_foreach_add.h>
#include <ATen/ops/_foreach_addcdiv.h>
#include <ATen/ops/_foreach_addcmul.h>
#include <ATen/ops/_foreach_div.h>
#include <ATen/ops/_foreach_lerp.h>
#include <ATen/ops/_foreach_mul.h>
#include <ATen/ops/_foreach_norm.h>
#include <ATen/ops/_foreach_sqrt.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/where.h>
#include <torch/nn/module.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <type_traits>

#include "cvtrain/core/error.h"
#include "cvtrain/optim/fused_optimizers.h"
#include "cvtrain/optim/groupwise_update.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {
namespace {

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

  torch::optim::AdamWParamState& state_of(const at::Tensor& p) { return adam_state_of(*this, p); }
};

// Updates the momentum buffers (a buffer starts as a copy of its first gradient) and returns
// them, or for Nesterov the gradients plus momentum x buffers, added in place as Python does
// (gradients are cleared before the next step anyway). torch.optim.SGD's multi-tensor path.
std::vector<at::Tensor> with_momentum(torch::optim::Optimizer& optimizer, std::vector<at::Tensor> grads, const std::vector<at::Tensor>& params,
                                      const torch::optim::SGDOptions& options) {
  std::vector<at::Tensor> buffers, continued, continued_grads;
  for (size_t i = 0; i < params.size(); ++i) {
    std::unique_ptr<torch::optim::OptimizerParamState>& slot = optimizer.state()[params[i].unsafeGetTensorImpl()];
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
    if (options.momentum() != 0) directions = with_momentum(*this, directions, u.params, options);
    at::_foreach_add_(u.params, directions, -options.lr());
  }

};

// where(w > 0, where(g > 0, ratio, 1), 1) for every tensor at once, on the device.
at::Tensor guarded_ratios(const at::Tensor& w_norms, const at::Tensor& g_norms, const at::Tensor& ratios) {
  const at::Tensor one = at::ones_like(ratios);
  return at::where(w_norms > 0, at::where(g_norms > 0, ratios, one), one);
}

// timm's Lamb (single-tensor path): Adam's update of gradients first scaled to a global norm of
// at most max_grad_norm, plus weight decay, times the trust ratio |w| / |update| where the group
// decays.
class Lamb : public GroupwiseUpdate<torch::optim::AdamW> {
 public:
  Lamb(std::vector<torch::optim::OptimizerParamGroup> groups, torch::optim::AdamWOptions defaults, const OptimSpec& spec)
      : GroupwiseUpdate<torch::optim::AdamW>(std::move(groups), std::move(defaults)),
        max_grad_norm_(spec.max_grad_norm),
        trust_clip_(spec.trust_clip) {}

  at::Tensor step(torch::optim::Optimizer::LossClosure closure = nullptr) override {
    torch::NoGradGuard no_grad;
    clip_ = global_clip();
    return GroupwiseUpdate<torch::optim::AdamW>::step(std::move(closure));
  }

 private:
  // max(|all gradients| / max_grad_norm, 1) as a device scalar; undefined when off.
  at::Tensor global_clip() {
    if (max_grad_norm_ <= 0) return {};
    std::vector<at::Tensor> grads;
    for (auto& group : param_groups())
      for (const at::Tensor& p : group.params())
        if (p.grad().defined()) grads.push_back(p.grad());
    if (grads.empty()) return {};
    return at::stack(at::_foreach_norm(grads)).norm().div(max_grad_norm_).clamp_min(1.0);
  }

  void update(torch::optim::OptimizerParamGroup& group) override {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
    const auto [beta1, beta2] = options.betas();
    const double lr = options.lr(), wd = options.weight_decay();
    Updated u = with_gradients(group);
    if (u.params.empty()) return;
    std::vector<at::Tensor> exp_avgs, exp_avg_sqs;
    int64_t step = 0;
    for (const at::Tensor& p : u.params) {
      torch::optim::AdamWParamState& s = adam_state_of(*this, p);
      s.step(s.step() + 1);
      step = s.step();
      exp_avgs.push_back(s.exp_avg());
      exp_avg_sqs.push_back(s.exp_avg_sq());
    }
    const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(step));
    const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(step));
    const std::vector<at::Tensor> grads = clip_.defined() ? at::_foreach_div(u.grads, clip_) : u.grads;
    at::_foreach_lerp_(exp_avgs, grads, 1 - beta1);
    at::_foreach_mul_(exp_avg_sqs, beta2);
    at::_foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2);
    std::vector<at::Tensor> denominators = at::_foreach_sqrt(exp_avg_sqs);
    at::_foreach_div_(denominators, std::sqrt(bias_correction2));
    at::_foreach_add_(denominators, options.eps());
    std::vector<at::Tensor> updates = at::_foreach_div(exp_avgs, bias_correction1);
    at::_foreach_div_(updates, denominators);
    if (wd != 0) {
      at::_foreach_add_(updates, u.params, wd);
      const at::Tensor w = at::stack(at::_foreach_norm(u.params)), g = at::stack(at::_foreach_norm(updates));
      at::Tensor ratios = guarded_ratios(w, g, w / g);
      if (trust_clip_) ratios = ratios.clamp_max(1.0);
      for (size_t i = 0; i < updates.size(); ++i) updates[i].mul_(ratios[static_cast<int64_t>(i)]);
    }
    at::_foreach_add_(u.params, updates, -lr);
  }

  double max_grad_norm_;
  bool trust_clip_;
  at::Tensor clip_;
};

// timm's Lars (single-tensor path): where the group decays, the gradient plus weight decay is
// scaled by trust_coeff |w| / (|g| + wd |w| + eps) (LARC: that over lr, at most 1); then SGD's
// momentum and Nesterov as torch.optim.SGD.
class Lars : public GroupwiseUpdate<torch::optim::SGD> {
 public:
  Lars(std::vector<torch::optim::OptimizerParamGroup> groups, torch::optim::SGDOptions defaults, const OptimSpec& spec)
      : GroupwiseUpdate<torch::optim::SGD>(std::move(groups), std::move(defaults)), trust_coeff_(spec.trust_coeff), trust_clip_(spec.trust_clip),
        eps_(spec.eps) {}

 private:
  void update(torch::optim::OptimizerParamGroup& group) override {
    const auto& options = static_cast<const torch::optim::SGDOptions&>(group.options());
    const double lr = options.lr(), wd = options.weight_decay(), momentum = options.momentum();
    Updated u = with_gradients(group);
    if (u.params.empty()) return;
    std::vector<at::Tensor> grads = u.grads;
    if (wd != 0) {
      const at::Tensor w = at::stack(at::_foreach_norm(u.params)), g = at::stack(at::_foreach_norm(grads));
      at::Tensor ratios = guarded_ratios(w, g, trust_coeff_ * w / (g + w * wd + eps_));
      if (trust_clip_) ratios = (ratios / lr).clamp_max(1.0);
      grads = at::_foreach_add(grads, u.params, wd);
      for (size_t i = 0; i < grads.size(); ++i) grads[i].mul_(ratios[static_cast<int64_t>(i)]);
    }
    if (momentum != 0) grads = with_momentum(*this, grads, u.params, options);
    at::_foreach_add_(u.params, grads, -lr);
  }

  double trust_coeff_;
  bool trust_clip_;
  double eps_;
};

}  // namespace

bool decays(const std::string& name, const at::Tensor& parameter) {
  const bool bias_table = name.size() >= 28 && name.compare(name.size() - 28, 28, "relative_position_bias_table") == 0;
  return parameter.dim() >= 2 && name != "pos_embed" && name != "cls_token" && !bias_table;
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

namespace {

// One (tensors, weight decay, scale) per group: decay and no_decay, split by scale when there are scales.
struct GroupPlan {
  std::vector<at::Tensor> tensors;
  bool decays = false;
  double scale = 1;
};
std::vector<GroupPlan> plan_groups(const ParameterGroups& p) {
  std::vector<GroupPlan> plans;
  const auto add = [&](const std::vector<at::Tensor>& tensors, const std::vector<double>& scales, bool decays) {
    if (scales.empty()) {
      plans.push_back({tensors, decays, 1.0});
      return;
    }
    std::map<double, size_t> index;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const auto [it, fresh] = index.emplace(scales[i], plans.size());
      if (fresh) plans.push_back({{}, decays, scales[i]});
      plans[it->second].tensors.push_back(tensors[i]);
    }
  };
  add(p.decay, p.decay_scales, true);
  add(p.no_decay, p.no_decay_scales, false);
  return plans;
}

// The optimizer over `plans`, each group's options from `options(weight decay)`, scales kept.
template <class Made, class Options, class MakeOptions>
std::unique_ptr<torch::optim::Optimizer> make_grouped(const std::vector<GroupPlan>& plans, MakeOptions options, Options defaults,
                                                      const OptimSpec& spec) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  std::vector<double> scales;
  for (const GroupPlan& plan : plans) {
    groups.emplace_back(plan.tensors, options(plan.decays ? spec.weight_decay : 0.0));
    scales.push_back(plan.scale);
  }
  std::unique_ptr<Made> made;
  if constexpr (std::is_constructible_v<Made, std::vector<torch::optim::OptimizerParamGroup>, Options, const OptimSpec&>)
    made = std::make_unique<Made>(groups, defaults, spec);
  else
    made = std::make_unique<Made>(groups, defaults);
  made->lr_scales = scales;
  return made;
}

// optim.implementation: auto stays on the multi-tensor path, bit for bit torch.optim's default;
// fused is faster (docs/benchmarks.md, "Optimizer kernels") but equal only within float rounding.
bool fused(const OptimSpec& spec) { return spec.implementation == OptimImplementation::kFused; }

}  // namespace

std::unique_ptr<torch::optim::Optimizer> build_optimizer(const OptimSpec& spec, const ParameterGroups& parameters) {
  const std::vector<GroupPlan> plans = plan_groups(parameters);
  if (spec.name == OptimizerKind::kAdamw || spec.name == OptimizerKind::kLamb) {
    auto options = [&](double wd) {
      return std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(spec.lr)
                                                              .betas({spec.betas.at(0), spec.betas.at(1)})
                                                              .eps(spec.eps)
                                                              .weight_decay(wd));
    };
    if (spec.name == OptimizerKind::kLamb) return make_grouped<Lamb>(plans, options, torch::optim::AdamWOptions(spec.lr), spec);
    if (fused(spec)) return make_grouped<FusedAdamW>(plans, options, torch::optim::AdamWOptions(spec.lr), spec);
    return make_grouped<ForeachAdamW>(plans, options, torch::optim::AdamWOptions(spec.lr), spec);
  }
  auto options = [&](double wd) {
    return std::make_unique<torch::optim::SGDOptions>(
        torch::optim::SGDOptions(spec.lr).momentum(spec.momentum).nesterov(spec.nesterov).weight_decay(wd));
  };
  if (spec.name == OptimizerKind::kLars) return make_grouped<Lars>(plans, options, torch::optim::SGDOptions(spec.lr), spec);
  if (fused(spec)) return make_grouped<FusedSgd>(plans, options, torch::optim::SGDOptions(spec.lr), spec);
  return make_grouped<ForeachSgd>(plans, options, torch::optim::SGDOptions(spec.lr), spec);
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  const auto* scaled = dynamic_cast<const ScaledGroups*>(&optimizer);
  auto& groups = optimizer.param_groups();
  for (size_t i = 0; i < groups.size(); ++i)
    groups[i].options().set_lr(scaled && i < scaled->lr_scales.size() ? lr * scaled->lr_scales[i] : lr);
  if (auto* device_side = dynamic_cast<DeviceGradScaling*>(&optimizer)) device_side->stage_learning_rates();
}

StateFields optimizer_state_of(torch::optim::Optimizer& optimizer, const at::Tensor& tensor) {
  if (auto* device_scaled = dynamic_cast<DeviceGradScaling*>(&optimizer)) device_scaled->refresh_host_steps();
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
