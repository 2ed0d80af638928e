// The fused kernels called as torch.optim's _fused_adamw / _fused_sgd call them: step counters
// added to before the kernel and taken back where found_inf is set, the learning rate a tensor on
// CUDA and a number on the CPU.
#include "cvtrain/optim/fused_optimizers.h"

#include <ATen/ATen.h>
#include <ATen/ops/_foreach_add.h>
#include <ATen/ops/_foreach_sub.h>
#include <ATen/ops/_fused_adamw.h>
#include <ATen/ops/_fused_sgd.h>

#include "cvtrain/core/error.h"

namespace cvtrain {

const at::Tensor& TakesGradScaling::device_lr(const torch::optim::OptimizerParamGroup& group, const at::Tensor& like) {
  StagedRate& rate = lr_tensors_[&group];
  if (!rate.value.defined()) rate.value = at::empty({}, like.options().dtype(at::kFloat));
  const double lr = group.options().get_lr();
  if (rate.host != lr) {
    rate.value.fill_(lr);
    rate.host = lr;
  }
  return rate.value;
}

void TakesGradScaling::stage_groups(const std::vector<torch::optim::OptimizerParamGroup>& groups) {
  for (const auto& group : groups)
    if (!group.params().empty() && group.params().front().is_cuda()) device_lr(group, group.params().front());
}

at::Tensor FusedAdamW::step(torch::optim::Optimizer::LossClosure closure) {
  at::Tensor loss = GroupwiseUpdate<torch::optim::AdamW>::step(std::move(closure));
  if (found_inf()) host_steps_stale_ = true;  // only the device knows which steps happened
  forget_scaling();
  return loss;
}

void FusedAdamW::update(torch::optim::OptimizerParamGroup& group) {
  const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
  if (options.amsgrad()) throw Error("AdamW: amsgrad is not supported");
  Updated u = with_gradients(group);
  if (u.params.empty()) return;
  std::vector<at::Tensor> exp_avgs, exp_avg_sqs, steps;
  for (const at::Tensor& p : u.params) {
    torch::optim::AdamWParamState& s = adam_state_of(*this, p);
    DeviceStep& d = steps_[p.unsafeGetTensorImpl()];
    // A fresh parameter, or state loaded from a checkpoint since: the host count is the truth.
    if (!d.value.defined() || (!host_steps_stale_ && d.host != s.step())) {
      d.value = at::full({}, static_cast<double>(s.step()), p.options().dtype(at::kFloat));
      d.host = s.step();
    }
    exp_avgs.push_back(s.exp_avg());
    exp_avg_sqs.push_back(s.exp_avg_sq());
    steps.push_back(d.value);
  }
  at::_foreach_add_(steps, 1);
  const auto [beta1, beta2] = options.betas();
  const bool on_cuda = u.params.front().is_cuda();
  if (on_cuda) {
    at::_fused_adamw_(u.params, u.grads, exp_avgs, exp_avg_sqs, {}, steps, device_lr(group, u.params.front()), beta1, beta2, options.weight_decay(), options.eps(),
                      /*amsgrad=*/false, /*maximize=*/false, grad_scale(), found_inf());
  } else {
    at::_fused_adamw_(u.params, u.grads, exp_avgs, exp_avg_sqs, {}, steps, options.lr(), beta1, beta2, options.weight_decay(),
                      options.eps(), /*amsgrad=*/false, /*maximize=*/false, grad_scale(), found_inf());
  }
  if (const auto skipped = found_inf()) {
    at::_foreach_sub_(steps, std::vector<at::Tensor>(steps.size(), skipped->reshape({})));  // [1] or []: the counts' shape
    return;
  }
  for (const at::Tensor& p : u.params) {
    torch::optim::AdamWParamState& s = adam_state_of(*this, p);
    s.step(s.step() + 1);
    steps_[p.unsafeGetTensorImpl()].host = s.step();
  }
}

void FusedAdamW::refresh_host_steps() {
  if (!host_steps_stale_) return;
  for (auto& group : param_groups())
    for (const at::Tensor& p : group.params()) {
      const auto it = steps_.find(p.unsafeGetTensorImpl());
      if (it == steps_.end()) continue;
      adam_state_of(*this, p).step(static_cast<int64_t>(it->second.value.item<float>()));
      it->second.host = adam_state_of(*this, p).step();
    }
  host_steps_stale_ = false;
}

at::Tensor FusedSgd::step(torch::optim::Optimizer::LossClosure closure) {
  at::Tensor loss = GroupwiseUpdate<torch::optim::SGD>::step(std::move(closure));
  forget_scaling();
  return loss;
}

// Momentum buffers start at zero rather than as the first gradient (the kernel's is_first_step):
// with no dampening the first update makes them that gradient exactly, and a first step skipped
// for an overflow leaves them zero instead of uninitialised, as torch.optim's fused SGD would.
void FusedSgd::update(torch::optim::OptimizerParamGroup& group) {
  const auto& options = static_cast<const torch::optim::SGDOptions&>(group.options());
  if (options.dampening() != 0) throw Error("fused SGD: dampening is not supported");
  Updated u = with_gradients(group);
  if (u.params.empty()) return;
  std::vector<at::Tensor> buffers;
  if (options.momentum() != 0)
    for (const at::Tensor& p : u.params) {
      std::unique_ptr<torch::optim::OptimizerParamState>& slot = state()[p.unsafeGetTensorImpl()];
      if (!slot) {
        auto fresh = std::make_unique<torch::optim::SGDParamState>();
        fresh->momentum_buffer(at::zeros_like(p, at::MemoryFormat::Preserve));
        slot = std::move(fresh);
      }
      buffers.push_back(static_cast<torch::optim::SGDParamState&>(*slot).momentum_buffer());
    }
  if (u.params.front().is_cuda()) {
    at::_fused_sgd_(u.params, u.grads, buffers, options.weight_decay(), options.momentum(), device_lr(group, u.params.front()),
                    options.dampening(), options.nesterov(),
                    /*maximize=*/false, /*is_first_step=*/false, grad_scale(), found_inf());
  } else {
    at::_fused_sgd_(u.params, u.grads, buffers, options.weight_decay(), options.momentum(), options.lr(), options.dampening(),
                    options.nesterov(), /*maximize=*/false, /*is_first_step=*/false, grad_scale(), found_inf());
  }
}

}  // namespace cvtrain
