// Building blocks several architectures share: timm's truncated-normal init and stochastic depth.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace cvtrain {

// torch.nn.init.trunc_normal_: a normal(mean, std) truncated to [lo, hi], in place.
void trunc_normal_(at::Tensor tensor, double mean, double std, double lo, double hi);

// Stochastic depth: a sample's residual branch is dropped with probability `rate` in training.
at::Tensor drop_path(const at::Tensor& branch, double rate, bool training);

// timm's per-block drop-path rates: rising linearly from 0 at the first block to `rate` at the last.
std::vector<double> drop_path_rates(double rate, int64_t blocks);

}  // namespace cvtrain
