// ResNet-18/34/50/101 with torchvision's layout, parameter names and initialisation, so weights move
// between cvtrain and torchvision unchanged. `model.small_stem` swaps the 7x7/2 stem and max-pool
// for a 3x3/1 stem, the usual choice for 32-pixel images; `model.drop_path` drops each block's
// residual branch as timm's ResNet does (ResNet strikes back), rising linearly over the blocks.
#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>

#include "cvtrain/models/architectures.h"
#include "cvtrain/models/batch_norm.h"
#include "cvtrain/models/layers.h"
#include "cvtrain/models/recompute.h"
#include "cvtrain/models/resnet_trunk.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {
namespace {

namespace nn = torch::nn;

nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t dilation = 1) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2 * dilation).dilation(dilation).bias(false));
}

// BasicBlock (expansion 1) and Bottleneck (expansion 4, stride and dilation on the 3x3 as in
// torchvision v1.5). torchvision refuses a dilated BasicBlock; here its two 3x3s are both dilated.
class BlockImpl : public nn::Module, public RecomputableBlock {
 public:
  BlockImpl(int64_t in, int64_t planes, int64_t stride, int64_t dilation, bool bottleneck, double drop_path)
      : bottleneck_(bottleneck), drop_path_(drop_path) {
    const int64_t out = planes * (bottleneck ? 4 : 1);
    if (bottleneck) {
      conv1_ = register_module("conv1", conv(in, planes, 1, 1));
      conv2_ = register_module("conv2", conv(planes, planes, 3, stride, dilation));
      conv3_ = register_module("conv3", conv(planes, out, 1, 1));
    } else {
      conv1_ = register_module("conv1", conv(in, planes, 3, stride, dilation));
      conv2_ = register_module("conv2", conv(planes, planes, 3, 1, dilation));
    }
    bn1_ = register_module("bn1", SyncableBatchNorm2d(planes));
    bn2_ = register_module("bn2", SyncableBatchNorm2d(bottleneck ? planes : out));
    if (bottleneck) bn3_ = register_module("bn3", SyncableBatchNorm2d(out));
    if (stride != 1 || in != out) downsample_ = register_module("downsample", nn::Sequential(conv(in, out, 1, stride), SyncableBatchNorm2d(out)));
  }

  at::Tensor forward(const at::Tensor& x) { return forward_block(x); }
  at::Tensor forward_block(const at::Tensor& x) override {
    at::Tensor identity = downsample_ ? downsample_->forward(x) : x;
    at::Tensor y = bn1_(conv1_(x)).relu_();
    y = bn2_(conv2_(y));
    if (bottleneck_) y = bn3_(conv3_(y.relu_()));
    y = drop_path(y, drop_path_, is_training());  // timm: after the last norm, before the shortcut is added
    return (y += identity).relu_();
  }

 private:
  bool bottleneck_;
  double drop_path_;
  nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr};
  SyncableBatchNorm2d bn1_{nullptr}, bn2_{nullptr}, bn3_{nullptr};
  nn::Sequential downsample_{nullptr};
};
TORCH_MODULE(Block);

std::vector<int64_t> stage_depths(int depth) {
  if (depth == 18) return {2, 2, 2, 2};
  if (depth == 101) return {3, 4, 23, 3};
  return {3, 4, 6, 3};  // 34 and 50
}

class ResNet : public Classifier {
 public:
  ResNet(int depth, const ModelSpec& spec, int64_t in_channels) : trunk_(*this, depth, spec, in_channels, false) {
    grad_checkpointing_ = spec.grad_checkpointing;
    for (size_t i = 0; i < trunk_.block_count(); ++i) add_block(trunk_.block_module(i), trunk_.block(i));
    fc_ = register_module("fc", nn::Linear(trunk_.channels_of(4), spec.num_classes));
    ResNetTrunk::initialise(*this);
  }

  bool is_convolutional() const override { return true; }
  at::Tensor forward(const at::Tensor& images) override {
    at::Tensor x = trunk_.stem(images);
    for (size_t i = 0; i < trunk_.block_count(); ++i) x = run_block(i, x);
    return fc_(x.mean({2, 3}));
  }

 private:
  ResNetTrunk trunk_;
  nn::Linear fc_{nullptr};
};

}  // namespace

struct ResNetTrunk::Parts {
  nn::Conv2d conv1{nullptr};
  SyncableBatchNorm2d bn1{nullptr};
  bool small_stem = false;
};

ResNetTrunk::ResNetTrunk(nn::Module& owner, int depth, const ModelSpec& spec, int64_t in_channels, bool output_stride_8)
    : parts_(std::make_shared<Parts>()) {
  parts_->small_stem = spec.small_stem;
  parts_->conv1 = owner.register_module("conv1", spec.small_stem ? conv(in_channels, 64, 3, 1) : conv(in_channels, 64, 7, 2));
  parts_->bn1 = owner.register_module("bn1", SyncableBatchNorm2d(64));
  const bool bottleneck = depth >= 50;
  const std::vector<int64_t> depths = stage_depths(depth);
  int64_t total = 0;
  for (int64_t n : depths) total += n;
  const std::vector<double> rates = drop_path_rates(spec.drop_path, total);
  int64_t in = 64, dilation = 1;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t planes = int64_t{64} << stage;
    // torchvision's _make_layer(dilate=True): the stride becomes dilation; the layer's first block
    // keeps the dilation before it, the others take the new one.
    const bool dilate = output_stride_8 && stage >= 2;
    const int64_t previous_dilation = dilation;
    if (dilate) dilation *= 2;
    nn::Sequential layer;
    for (int64_t b = 0; b < depths[stage]; ++b) {
      const int64_t stride = b == 0 && stage > 0 && !dilate ? 2 : 1;
      auto block = Block(in, planes, stride, b == 0 ? previous_dilation : dilation, bottleneck, rates[blocks_.size()]);
      blocks_.push_back(block.ptr());
      recomputable_.push_back(block.get());
      layer->push_back(block);
      in = planes * (bottleneck ? 4 : 1);
    }
    owner.register_module("layer" + std::to_string(stage + 1), layer);
    stage_ends_.push_back(blocks_.size());
    channels_.push_back(in);
  }
}

at::Tensor ResNetTrunk::stem(const at::Tensor& images) const {
  at::Tensor x = parts_->bn1(parts_->conv1(images)).relu_();
  return parts_->small_stem ? x : at::max_pool2d(x, {3, 3}, {2, 2}, {1, 1});
}

nn::Module& ResNetTrunk::block_module(size_t index) const { return *blocks_[index]; }
RecomputableBlock& ResNetTrunk::block(size_t index) const { return *recomputable_[index]; }

// torchvision: Kaiming-normal (fan_out) convolutions, BatchNorm at weight 1 and bias 0.
void ResNetTrunk::initialise(nn::Module& module) {
  for (auto& child : module.modules(/*include_self=*/false)) {
    if (auto* c = child->as<nn::Conv2d>()) {
      nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
    } else if (auto* bn = child->as<nn::BatchNorm2d>()) {
      nn::init::ones_(bn->weight);
      nn::init::zeros_(bn->bias);
    }
  }
}

std::shared_ptr<Classifier> make_resnet(int depth, const ModelSpec& spec, int64_t in_channels) {
  return std::make_shared<ResNet>(depth, spec, in_channels);
}

}  // namespace cvtrain
