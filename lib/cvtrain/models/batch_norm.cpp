// Synchronised BatchNorm as a custom autograd function. Forward all-reduces [sum, sum of squares,
// count] per channel; backward all-reduces [sum dy, sum dy*xhat] — the same two reductions
// PyTorch's SyncBatchNorm makes, so the gradient equals one process seeing the whole batch.
#include "cvtrain/models/batch_norm.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include "cvtrain/models/recompute.h"

namespace cvtrain {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using Reduce = std::function<void(at::Tensor&)>;

at::Tensor per_channel(const at::Tensor& v) { return v.view({1, -1, 1, 1}); }

struct SyncBatchNormFunction : public torch::autograd::Function<SyncBatchNormFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                            SyncableBatchNorm2dImpl* module, const Reduce* reduce) {
    const at::Tensor x = input.to(at::kFloat);
    const int64_t channels = x.size(1);
    const std::vector<int64_t> dims{0, 2, 3};
    at::Tensor stats = at::cat({x.sum(dims), x.mul(x).sum(dims), at::full({1}, static_cast<double>(x.numel() / channels), x.options())});
    (*reduce)(stats);
    const at::Tensor count = stats[2 * channels];
    const at::Tensor mean = stats.narrow(0, 0, channels) / count;
    const at::Tensor var = (stats.narrow(0, channels, channels) / count - mean * mean).clamp_min(0);
    const at::Tensor invstd = (var + module->options.eps()).rsqrt();
    update_running_stats(*module, mean, var, count.item<double>());
    const at::Tensor xhat = (x - per_channel(mean)) * per_channel(invstd);
    ctx->save_for_backward({xhat, weight, invstd});
    ctx->saved_data["count"] = count.item<double>();
    ctx->saved_data["reduce"] = reinterpret_cast<int64_t>(reduce);
    return (xhat * per_channel(weight) + per_channel(bias)).to(input.scalar_type());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &xhat = saved[0], &weight = saved[1], &invstd = saved[2];
    const auto* reduce = reinterpret_cast<const Reduce*>(ctx->saved_data["reduce"].toInt());
    const double count = ctx->saved_data["count"].toDouble();
    const at::Tensor dy = grads[0].to(at::kFloat);
    const std::vector<int64_t> dims{0, 2, 3};
    const at::Tensor local_sum_dy = dy.sum(dims), local_sum_dy_xhat = dy.mul(xhat).sum(dims);
    at::Tensor sums = at::cat({local_sum_dy, local_sum_dy_xhat});
    (*reduce)(sums);
    const int64_t channels = xhat.size(1);
    const at::Tensor mean_dy = sums.narrow(0, 0, channels) / count;
    const at::Tensor mean_dy_xhat = sums.narrow(0, channels, channels) / count;
    const at::Tensor dx = (dy - per_channel(mean_dy) - xhat * per_channel(mean_dy_xhat)) * per_channel(weight * invstd);
    // Parameter gradients stay local: DDP averages them across ranks like every other gradient.
    return {dx.to(grads[0].scalar_type()), local_sum_dy_xhat, local_sum_dy, at::Tensor(), at::Tensor()};
  }

  static void update_running_stats(SyncableBatchNorm2dImpl& m, const at::Tensor& mean, const at::Tensor& var, double count) {
    if (!m.options.track_running_stats() || is_recomputing()) return;  // a checkpoint replay saw this batch already
    torch::NoGradGuard no_grad;
    m.num_batches_tracked += 1;
    const double momentum = m.options.momentum().value_or(1.0 / m.num_batches_tracked.item<double>());
    m.running_mean.mul_(1 - momentum).add_(mean.to(m.running_mean.scalar_type()), momentum);
    const at::Tensor unbiased = var * (count / std::max(1.0, count - 1));
    m.running_var.mul_(1 - momentum).add_(unbiased.to(m.running_var.scalar_type()), momentum);
  }
};

}  // namespace

at::Tensor SyncableBatchNorm2dImpl::forward(const at::Tensor& input) {
  const bool synchronised = all_reduce_sum_ && options.affine();
  if (is_training() && is_recomputing() && !synchronised)  // batch statistics, running averages left alone
    return at::batch_norm(input, weight, bias, {}, {}, /*training=*/true, 0.0, options.eps(), at::globalContext().userEnabledCuDNN());
  if (!is_training() || !synchronised) return torch::nn::BatchNorm2dImpl::forward(input);
  return SyncBatchNormFunction::apply(input, weight, bias, this, &all_reduce_sum_);
}

}  // namespace cvtrain
