// The transformer-style MLP (Linear -> GELU -> Linear, 4x wider inside) of ViT and ConvNeXt blocks,
// named fc1/fc2 as timm names it.
#pragma once

#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>

namespace cvtrain {

class MlpImpl : public torch::nn::Module {
 public:
  explicit MlpImpl(int64_t width)
      : fc1(register_module("fc1", torch::nn::Linear(width, 4 * width))), fc2(register_module("fc2", torch::nn::Linear(4 * width, width))) {}
  at::Tensor forward(const at::Tensor& x) { return fc2(at::gelu(fc1(x))); }
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Mlp);

}  // namespace cvtrain
