// Optimizer construction from OptimSpec: SGD (momentum, Nesterov) or AdamW, updating exactly as
// torch.optim does (multi-tensor kernels), with weight decay kept
// off normalisation weights, biases and embeddings; and the optimizer's per-tensor state as named
// fields, which is how checkpoints store it whatever the strategy.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace torch::nn {
class Module;
}
namespace torch::optim {
class Optimizer;
}

namespace cvtrain {

struct OptimSpec;

// An optimizer that takes fp16's loss scale on the device (optim.implementation: fused): the next
// step() divides the gradients by `grad_scale` inside its kernel and changes nothing where
// `found_inf` is nonzero, so no host synchronisation decides a skipped step.
class DeviceGradScaling {
 public:
  virtual ~DeviceGradScaling() = default;
  virtual void scale_next_step(const at::Tensor& grad_scale, const at::Tensor& found_inf) = 0;
  // Brings host-side state (AdamW's step counts) up to date with the device; a synchronisation.
  virtual void refresh_host_steps() {}
  // Copies each group's learning rate into the device tensor the kernel reads (set_learning_rate
  // calls it), so that an update captured in a CUDA graph reads the current rate at every replay.
  virtual void stage_learning_rates() {}
};

// Whether weight decay applies: weights of rank >= 2, except ViT's pos_embed and cls_token and Swin's
// relative_position_bias_table (timm's rule and its no_weight_decay_keywords).
bool decays(const std::string& name, const at::Tensor& parameter);

struct ParameterGroups {
  std::vector<at::Tensor> decay, no_decay;
  // optim.layer_decay: each tensor's learning-rate scale, in the order above; empty: all 1.
  std::vector<double> decay_scales, no_decay_scales;
};
ParameterGroups parameter_groups(torch::nn::Module& model);

// Two groups: `decay` with optim.weight_decay, `no_decay` without; with scales, one pair per
// distinct scale, whose learning rate set_learning_rate multiplies by it.
std::unique_ptr<torch::optim::Optimizer> build_optimizer(const OptimSpec& spec, const ParameterGroups& groups);
std::unique_ptr<torch::optim::Optimizer> build_optimizer(const OptimSpec& spec, torch::nn::Module& model);
// Fused optimizers on CUDA also get it on the device (DeviceGradScaling::stage_learning_rates).
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

// The optimizer's state for one tensor it updates: AdamW "step" (an int64 scalar), "exp_avg",
// "exp_avg_sq"; SGD "momentum_buffer". Empty before the tensor's first step.
using StateFields = std::vector<std::pair<std::string, at::Tensor>>;
StateFields optimizer_state_of(torch::optim::Optimizer& optimizer, const at::Tensor& tensor);
// Sets it from fields as optimizer_state_of returns them (copied, in the tensor's dtype, device
// and memory layout). Throws Error naming a missing field.
void set_optimizer_state(torch::optim::Optimizer& optimizer, const at::Tensor& tensor, const StateFields& fields);

}  // namespace cvtrain
