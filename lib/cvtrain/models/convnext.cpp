// ConvNeXt-Tiny/Small in timm's layout and parameter names (stem.{0,1}, stages.N.downsample.{0,1},
// stages.N.blocks.M.{conv_dw,norm,mlp.fc1,mlp.fc2,gamma}, head.{norm,fc}) and timm's initialisation,
// so `convnext_tiny` weights move between cvtrain and timm unchanged.
#include <ATen/ATen.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <numeric>

#include "cvtrain/models/architectures.h"
#include "cvtrain/models/recompute.h"
#include "cvtrain/models/layers.h"
#include "cvtrain/models/mlp.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {
// Named, so that its blocks keep apart from other architectures' where sources are compiled together
// (CVTRAIN_UNITY_BUILD).
namespace convnext_model {
namespace {

namespace nn = torch::nn;

constexpr double kLayerNormEps = 1e-6;
constexpr double kLayerScaleInit = 1e-6;

nn::LayerNormOptions layer_norm_options(int64_t channels) { return nn::LayerNormOptions({channels}).eps(kLayerNormEps); }

// LayerNorm over the channels of an NCHW tensor (timm's LayerNorm2d): normalised as NHWC.
class LayerNorm2dImpl : public nn::LayerNormImpl {
 public:
  explicit LayerNorm2dImpl(int64_t channels) : nn::LayerNormImpl(layer_norm_options(channels)) {}
  at::Tensor forward(const at::Tensor& x) { return nn::LayerNormImpl::forward(x.permute({0, 2, 3, 1})).permute({0, 3, 1, 2}); }
};
TORCH_MODULE(LayerNorm2d);

// 7x7 depthwise convolution, LayerNorm and MLP on channels-last rows, layer scale, residual.
class BlockImpl : public nn::Module, public RecomputableBlock {
 public:
  BlockImpl(int64_t width, double drop_path)
      : drop_path_(drop_path),
        conv_dw(register_module("conv_dw", nn::Conv2d(nn::Conv2dOptions(width, width, 7).padding(3).groups(width)))),
        norm(register_module("norm", nn::LayerNorm(layer_norm_options(width)))),
        mlp(register_module("mlp", Mlp(width))),
        gamma(register_parameter("gamma", at::full({width}, kLayerScaleInit))) {}

  at::Tensor forward_block(const at::Tensor& x) override {
    at::Tensor y = mlp(norm(conv_dw(x).permute({0, 2, 3, 1}))).permute({0, 3, 1, 2});
    y = y.mul(gamma.reshape({1, -1, 1, 1}));
    return drop_path(y, drop_path_, is_training()) + x;
  }

 private:
  double drop_path_;

 public:
  nn::Conv2d conv_dw;
  nn::LayerNorm norm;
  Mlp mlp;
  at::Tensor gamma;
};
TORCH_MODULE(Block);

// Pool -> LayerNorm -> Linear (timm's NormMlpClassifierHead without a hidden layer).
class HeadImpl : public nn::Module {
 public:
  HeadImpl(int64_t width, int64_t classes)
      : norm(register_module("norm", nn::LayerNorm(layer_norm_options(width)))), fc(register_module("fc", nn::Linear(width, classes))) {}
  at::Tensor forward(const at::Tensor& features) { return fc(norm(features.mean({2, 3}))); }
  nn::LayerNorm norm;
  nn::Linear fc;
};
TORCH_MODULE(Head);

struct ConvNextSize {
  std::vector<int64_t> depths, widths;
};

class ConvNeXt : public Classifier {
 public:
  ConvNeXt(const ConvNextSize& size, const ModelSpec& spec, int64_t in_channels) {
    grad_checkpointing_ = spec.grad_checkpointing;
    const int64_t total_blocks = std::accumulate(size.depths.begin(), size.depths.end(), int64_t{0});
    const std::vector<double> rates = drop_path_rates(spec.drop_path, total_blocks);
    stem_ = register_module("stem", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(in_channels, size.widths[0], 4).stride(4)),
                                                    LayerNorm2d(size.widths[0])));
    auto stages = register_module("stages", nn::ModuleList());
    size_t block_index = 0;
    for (size_t s = 0; s < size.depths.size(); ++s) {
      auto stage = std::make_shared<nn::Module>();
      if (s > 0) {
        const int64_t in = size.widths[s - 1], out = size.widths[s];
        downsamples_.push_back(stage->register_module(
            "downsample", nn::Sequential(LayerNorm2d(in), nn::Conv2d(nn::Conv2dOptions(in, out, 2).stride(2)))));
      } else {
        downsamples_.push_back(nullptr);
      }
      auto blocks = stage->register_module("blocks", nn::ModuleList());
      std::vector<Block> stage_blocks;  // owned by the module tree; registered with add_block
      for (int64_t b = 0; b < size.depths[s]; ++b) {
        stage_blocks.push_back(Block(size.widths[s], rates[block_index++]));
        blocks->push_back(stage_blocks.back());
        add_block(*stage_blocks.back(), *stage_blocks.back());
      }
      blocks_per_stage_.push_back(stage_blocks.size());
      stages->push_back(stage);
    }
    head_ = register_module("head", Head(size.widths.back(), spec.num_classes));
    initialise();
  }

  bool is_convolutional() const override { return true; }

  at::Tensor forward(const at::Tensor& images) override {
    at::Tensor x = stem_->forward(images);
    size_t block = 0;
    for (size_t s = 0; s < blocks_per_stage_.size(); ++s) {
      if (downsamples_[s]) x = downsamples_[s]->forward(x);
      for (size_t b = 0; b < blocks_per_stage_[s]; ++b) x = run_block(block++, x);
    }
    return head_(x);
  }

 private:
  // timm's _init_weights: truncated normal (std 0.02) for convolution and linear weights, zero biases.
  void initialise() {
    torch::NoGradGuard no_grad;
    apply([](nn::Module& module) {
      at::Tensor weight, bias;
      if (auto* conv = module.as<nn::Conv2dImpl>()) {
        weight = conv->weight;
        bias = conv->bias;
      } else if (auto* linear = module.as<nn::LinearImpl>()) {
        weight = linear->weight;
        bias = linear->bias;
      } else {
        return;
      }
      trunc_normal_(weight, 0.0, 0.02, -2.0, 2.0);
      if (bias.defined()) nn::init::zeros_(bias);
    });
  }

  nn::Sequential stem_{nullptr};
  std::vector<nn::Sequential> downsamples_;  // null for the first stage
  std::vector<size_t> blocks_per_stage_;
  Head head_{nullptr};
};

}  // namespace
}  // namespace convnext_model

std::shared_ptr<Classifier> make_convnext(const std::string& variant, const ModelSpec& spec, int64_t in_channels) {
  const std::vector<int64_t> depths = variant == "small" ? std::vector<int64_t>{3, 3, 27, 3} : std::vector<int64_t>{3, 3, 9, 3};
  const convnext_model::ConvNextSize size{depths, {96, 192, 384, 768}};
  return std::make_shared<convnext_model::ConvNeXt>(size, spec, in_channels);
}

}  // namespace cvtrain
