// optim.implementation: fused — SGD and AdamW through ATen's _fused_sgd_ and _fused_adamw_, one
// kernel per parameter group instead of a dozen multi-tensor ones, with the learning rate as a
// device tensor on CUDA and, where the caller hands them over, fp16's loss scale and overflow flag
// (the gradients are unscaled inside the kernel, and a step with found_inf leaves everything
// unchanged, without the host ever looking). The state types and fields are those of the foreach
// optimizers, so checkpoints move between the two implementations.
#pragma once

#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <unordered_map>

#include "cvtrain/optim/groupwise_update.h"
#include "cvtrain/optim/optimizer.h"

namespace cvtrain {

// grad_scale / found_inf for the next step() only (undefined tensors: none), as torch.optim's fused
// optimizers take them from GradScaler.
class TakesGradScaling : public DeviceGradScaling {
 public:
  void scale_next_step(const at::Tensor& grad_scale, const at::Tensor& found_inf) override {
    grad_scale_ = grad_scale;
    found_inf_ = found_inf;
  }

 protected:
  std::optional<at::Tensor> grad_scale() const { return grad_scale_.defined() ? std::optional<at::Tensor>(grad_scale_) : std::nullopt; }
  std::optional<at::Tensor> found_inf() const { return found_inf_.defined() ? std::optional<at::Tensor>(found_inf_) : std::nullopt; }
  void forget_scaling() { grad_scale_ = found_inf_ = at::Tensor(); }
  // The group's learning rate as a float tensor beside its parameters, refilled (a kernel, not a
  // synchronisation) only when the host value changed. Staged by set_learning_rate, so an update
  // inside a CUDA graph holds no fill of its own and reads whatever rate was staged before replay.
  const at::Tensor& device_lr(const torch::optim::OptimizerParamGroup& group, const at::Tensor& like);
  void stage_groups(const std::vector<torch::optim::OptimizerParamGroup>& groups);

 private:
  at::Tensor grad_scale_, found_inf_;
  struct StagedRate {
    at::Tensor value;
    double host = -1;
  };
  std::unordered_map<const void*, StagedRate> lr_tensors_;  // per group, on CUDA
};

class FusedAdamW : public GroupwiseUpdate<torch::optim::AdamW>, public TakesGradScaling {
 public:
  using GroupwiseUpdate<torch::optim::AdamW>::GroupwiseUpdate;
  at::Tensor step(torch::optim::Optimizer::LossClosure closure = nullptr) override;
  // AdamW's host step counters from the device ones, after steps that may have been skipped on the device.
  void refresh_host_steps() override;
  void stage_learning_rates() override { stage_groups(param_groups()); }

 private:
  void update(torch::optim::OptimizerParamGroup& group) override;
  // The float32 step counter the kernel reads, per parameter, and the host step it last equalled.
  struct DeviceStep {
    at::Tensor value;
    int64_t host = -1;
  };
  std::unordered_map<const c10::TensorImpl*, DeviceStep> steps_;
  bool host_steps_stale_ = false;
};

class FusedSgd : public GroupwiseUpdate<torch::optim::SGD>, public TakesGradScaling {
 public:
  using GroupwiseUpdate<torch::optim::SGD>::GroupwiseUpdate;
  at::Tensor step(torch::optim::Optimizer::LossClosure closure = nullptr) override;
  void stage_learning_rates() override { stage_groups(param_groups()); }

 private:
  void update(torch::optim::OptimizerParamGroup& group) override;
};

}  // namespace cvtrain
