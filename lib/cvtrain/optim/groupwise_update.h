// What cvtrain's optimizers share inside optim/: a LibTorch optimizer whose step() is one update
// per parameter group (no autograd), the parameters of a group that have gradients, the layer-decay
// scales, and Adam's state in AdamW's state type. Not for other modules: build_optimizer is.
#pragma once

#include <torch/optim/adamw.h>
#include <torch/optim/optimizer.h>
#include <torch/utils.h>

#include <vector>

namespace cvtrain {

// The parameters of a group that have gradients, with their gradients. The tensors themselves
// (not detached copies, whose TensorImpl differs): the state is keyed by the parameter's.
struct Updated {
  std::vector<at::Tensor> params, grads;
};
inline Updated with_gradients(torch::optim::OptimizerParamGroup& group) {
  Updated updated;
  for (const at::Tensor& p : group.params())
    if (p.grad().defined()) {
      updated.params.push_back(p);
      updated.grads.push_back(p.grad());
    }
  return updated;
}

// The learning-rate scale of each parameter group (layer decay), for set_learning_rate.
class ScaledGroups {
 public:
  virtual ~ScaledGroups() = default;
  std::vector<double> lr_scales;
};

// A LibTorch optimizer whose step() is update() per parameter group, without autograd.
template <class Base>
class GroupwiseUpdate : public Base, public ScaledGroups {
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

// Adam moments in AdamW's state type (so checkpoints and strategies treat both alike).
inline torch::optim::AdamWParamState& adam_state_of(torch::optim::Optimizer& optimizer, const at::Tensor& p) {
  std::unique_ptr<torch::optim::OptimizerParamState>& slot = optimizer.state()[p.unsafeGetTensorImpl()];
  if (!slot) {
    auto fresh = std::make_unique<torch::optim::AdamWParamState>();
    fresh->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
    fresh->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
    slot = std::move(fresh);
  }
  return static_cast<torch::optim::AdamWParamState&>(*slot);
}

}  // namespace cvtrain
