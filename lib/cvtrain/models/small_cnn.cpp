// small_cnn: three conv-BN-ReLU-pool blocks and a two-layer head; the quickstart model, sized so an
// epoch of Fashion-MNIST takes about a minute on two CPU cores. mlp: the simplest baseline.
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>

#include "cvtrain/models/architectures.h"
#include "cvtrain/models/batch_norm.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {
namespace {

namespace nn = torch::nn;

class SmallCnn : public Classifier {
 public:
  SmallCnn(int64_t in_channels, int64_t image_size, int64_t num_classes) {
    int64_t channels = in_channels, side = image_size;
    for (int64_t width : {32, 64, 128}) {
      layers_->push_back(nn::Conv2d(nn::Conv2dOptions(channels, width, 3).padding(1).bias(false)));
      layers_->push_back(SyncableBatchNorm2d(width));
      layers_->push_back(nn::ReLU(nn::ReLUOptions(true)));
      layers_->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(2)));
      channels = width;
      side /= 2;
    }
    layers_->push_back(nn::Flatten());
    layers_->push_back(nn::Linear(channels * side * side, 256));
    layers_->push_back(nn::ReLU(nn::ReLUOptions(true)));
    layers_->push_back(nn::Dropout(0.25));
    layers_->push_back(nn::Linear(256, num_classes));
    register_module("layers", layers_);
  }
  at::Tensor forward(const at::Tensor& images) override { return layers_->forward(images); }
  bool is_convolutional() const override { return true; }

 private:
  nn::Sequential layers_;
};

class Mlp : public Classifier {
 public:
  Mlp(int64_t inputs, int64_t num_classes) {
    layers_->push_back(nn::Flatten());
    layers_->push_back(nn::Linear(inputs, 256));
    layers_->push_back(nn::ReLU(nn::ReLUOptions(true)));
    layers_->push_back(nn::Linear(256, num_classes));
    register_module("layers", layers_);
  }
  at::Tensor forward(const at::Tensor& images) override { return layers_->forward(images); }

 private:
  nn::Sequential layers_;
};

}  // namespace

std::shared_ptr<Classifier> make_mlp(const ModelSpec& spec, int64_t in_channels) {
  return std::make_shared<Mlp>(in_channels * spec.image_size * spec.image_size, spec.num_classes);
}

std::shared_ptr<Classifier> make_small_cnn(const ModelSpec& spec, int64_t in_channels) {
  return std::make_shared<SmallCnn>(in_channels, spec.image_size, spec.num_classes);
}

}  // namespace cvtrain
