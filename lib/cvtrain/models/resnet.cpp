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
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {
namespace {

namespace nn = torch::nn;

nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
}

// BasicBlock (expansion 1) and Bottleneck (expansion 4, stride on the 3x3 as in torchvision v1.5).
class BlockImpl : public nn::Module, public RecomputableBlock {
 public:
  BlockImpl(int64_t in, int64_t planes, int64_t stride, bool bottleneck, double drop_path)
      : bottleneck_(bottleneck), drop_path_(drop_path) {
    const int64_t out = planes * (bottleneck ? 4 : 1);
    if (bottleneck) {
      conv1_ = register_module("conv1", conv(in, planes, 1, 1));
      conv2_ = register_module("conv2", conv(planes, planes, 3, stride));
      conv3_ = register_module("conv3", conv(planes, out, 1, 1));
    } else {
      conv1_ = register_module("conv1", conv(in, planes, 3, stride));
      conv2_ = register_module("conv2", conv(planes, planes, 3, 1));
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

class ResNet : public Classifier {
 public:
  ResNet(int depth, const ModelSpec& spec, int64_t in_channels) : small_stem_(spec.small_stem) {
    grad_checkpointing_ = spec.grad_checkpointing;
    const bool bottleneck = depth >= 50;
    const std::vector<int64_t> blocks = stage_depths(depth);
    conv1_ = register_module("conv1", small_stem_ ? conv(in_channels, 64, 3, 1) : conv(in_channels, 64, 7, 2));
    bn1_ = register_module("bn1", SyncableBatchNorm2d(64));
    int64_t in = 64;
    int64_t total = 0;
    for (int64_t n : blocks) total += n;
    const std::vector<double> rates = drop_path_rates(spec.drop_path, total);
    for (int stage = 0; stage < 4; ++stage) {
      const int64_t planes = int64_t{64} << stage;
      nn::Sequential layer;
      for (int64_t b = 0; b < blocks[stage]; ++b) {
        blocks_.push_back(Block(in, planes, b == 0 && stage > 0 ? 2 : 1, bottleneck, rates[blocks_.size()]));
        layer->push_back(blocks_.back());
        in = planes * (bottleneck ? 4 : 1);
      }
      register_module("layer" + std::to_string(stage + 1), layer);
    }
    for (auto& block : blocks_) add_block(*block, *block);
    fc_ = register_module("fc", nn::Linear(in, spec.num_classes));
    initialise();
  }

  bool is_convolutional() const override { return true; }
  at::Tensor forward(const at::Tensor& images) override {
    at::Tensor x = bn1_(conv1_(images)).relu_();
    if (!small_stem_) x = at::max_pool2d(x, {3, 3}, {2, 2}, {1, 1});
    for (size_t i = 0; i < blocks_.size(); ++i) x = run_block(i, x);
    return fc_(x.mean({2, 3}));
  }

 private:
  // torchvision: Kaiming-normal (fan_out) convolutions, BatchNorm at weight 1 and bias 0.
  void initialise() {
    for (auto& module : modules(/*include_self=*/false)) {
      if (auto* c = module->as<nn::Conv2d>()) {
        nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
      } else if (auto* bn = module->as<nn::BatchNorm2d>()) {
        nn::init::ones_(bn->weight);
        nn::init::zeros_(bn->bias);
      }
    }
  }

  static std::vector<int64_t> stage_depths(int depth) {
    if (depth == 18) return {2, 2, 2, 2};
    if (depth == 101) return {3, 4, 23, 3};
    return {3, 4, 6, 3};  // 34 and 50
  }

  bool small_stem_;
  std::vector<Block> blocks_;  // every block of layer1..layer4 in order
  nn::Conv2d conv1_{nullptr};
  SyncableBatchNorm2d bn1_{nullptr};
  nn::Linear fc_{nullptr};
};

}  // namespace

std::shared_ptr<Classifier> make_resnet(int depth, const ModelSpec& spec, int64_t in_channels) {
  return std::make_shared<ResNet>(depth, spec, in_channels);
}

}  // namespace cvtrain
