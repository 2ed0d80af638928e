// BatchNorm2d that can synchronise its batch statistics across ranks (model.sync_bn): the same
// parameters, buffers and names as torch::nn::BatchNorm2d, so weights move unchanged.
#pragma once

#include <torch/nn/modules/batchnorm.h>

#include <functional>

namespace cvtrain {

class SyncableBatchNorm2dImpl : public torch::nn::BatchNorm2dImpl {
 public:
  using torch::nn::BatchNorm2dImpl::BatchNorm2dImpl;
  // In training, statistics are the global batch's when an all-reduce (sum, in place) is set.
  at::Tensor forward(const at::Tensor& input);
  void set_all_reduce(std::function<void(at::Tensor&)> all_reduce_sum) { all_reduce_sum_ = std::move(all_reduce_sum); }

 private:
  std::function<void(at::Tensor&)> all_reduce_sum_;
};
TORCH_MODULE(SyncableBatchNorm2d);

}  // namespace cvtrain
