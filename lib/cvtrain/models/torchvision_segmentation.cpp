// torchvision's DeepLabV3 and FCN on a ResNet dilated to output stride 8, with the auxiliary FCN
// head on layer3, in torchvision's layout and parameter names (`backbone.layer4.2.conv2.weight`,
// `classifier.0.convs.4.1.weight`, `aux_classifier.4.bias`), so its weights load unchanged.
// Logits come out at the input's size (bilinear, align_corners false, as torchvision's).
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/pooling.h>

#include <ATen/ops/cat.h>
#include <ATen/ops/upsample_bilinear2d.h>

#include "cvtrain/models/architectures.h"
#include "cvtrain/models/batch_norm.h"
#include "cvtrain/models/resnet_trunk.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {
// Named, so that its blocks keep apart from other architectures' where sources are compiled together
// (CVTRAIN_UNITY_BUILD).
namespace resnet_segmentation_model {
namespace {

namespace nn = torch::nn;

constexpr int64_t kAsppChannels = 256;

nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t dilation = 1, bool bias = false) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).padding(kernel / 2 * dilation).dilation(dilation).bias(bias));
}

at::Tensor resized(const at::Tensor& x, at::IntArrayRef size) { return at::upsample_bilinear2d(x, size, /*align_corners=*/false); }

// ASPP: a 1x1 branch, three dilated 3x3 branches and image pooling, concatenated and projected.
class AsppImpl : public nn::Module {
 public:
  AsppImpl(int64_t in, const std::vector<int64_t>& rates) {
    convs_->push_back(nn::Sequential(conv(in, kAsppChannels, 1), SyncableBatchNorm2d(kAsppChannels), nn::ReLU()));
    for (int64_t rate : rates)
      convs_->push_back(nn::Sequential(conv(in, kAsppChannels, 3, rate), SyncableBatchNorm2d(kAsppChannels), nn::ReLU()));
    convs_->push_back(nn::Sequential(nn::AdaptiveAvgPool2d(1), conv(in, kAsppChannels, 1), SyncableBatchNorm2d(kAsppChannels), nn::ReLU()));
    register_module("convs", convs_);
    const int64_t branches = static_cast<int64_t>(rates.size()) + 2;
    project_ = register_module("project", nn::Sequential(conv(branches * kAsppChannels, kAsppChannels, 1),
                                                         SyncableBatchNorm2d(kAsppChannels), nn::ReLU(), nn::Dropout(0.5)));
  }

  at::Tensor forward(const at::Tensor& x) {
    std::vector<at::Tensor> branches;
    for (size_t i = 0; i < convs_->size(); ++i) {
      at::Tensor y = convs_[i]->as<nn::Sequential>()->forward(x);
      branches.push_back(i + 1 == convs_->size() ? resized(y, {x.size(2), x.size(3)}) : y);  // the pooled branch, spread back
    }
    return project_->forward(at::cat(branches, 1));
  }

 private:
  nn::ModuleList convs_;
  nn::Sequential project_{nullptr};
};
TORCH_MODULE(Aspp);

nn::Sequential deeplab_head(int64_t in, int64_t classes) {
  return nn::Sequential(Aspp(in, std::vector<int64_t>{12, 24, 36}), conv(kAsppChannels, kAsppChannels, 3),
                        SyncableBatchNorm2d(kAsppChannels), nn::ReLU(), conv(kAsppChannels, classes, 1, 1, true));
}

nn::Sequential fcn_head(int64_t in, int64_t classes) {
  const int64_t inner = in / 4;
  return nn::Sequential(conv(in, inner, 3), SyncableBatchNorm2d(inner), nn::ReLU(), nn::Dropout(0.1), conv(inner, classes, 1, 1, true));
}

class ResNetSegmentation : public Classifier {
 public:
  ResNetSegmentation(SegmentationHead head, int depth, const ModelSpec& spec, int64_t in_channels)
      : backbone_(register_module("backbone", std::make_shared<nn::Module>())), trunk_(*backbone_, depth, spec, in_channels, true) {
    grad_checkpointing_ = spec.grad_checkpointing;
    for (size_t i = 0; i < trunk_.block_count(); ++i) add_block(trunk_.block_module(i), trunk_.block(i));
    ResNetTrunk::initialise(*backbone_);
    const int64_t features = trunk_.channels_of(4);
    classifier_ = register_module("classifier", head == SegmentationHead::kDeepLabV3 ? deeplab_head(features, spec.num_classes)
                                                                                     : fcn_head(features, spec.num_classes));
    aux_classifier_ = register_module("aux_classifier", fcn_head(trunk_.channels_of(3), spec.num_classes));
  }

  bool is_convolutional() const override { return true; }
  std::string encoder_prefix() const override { return "backbone."; }
  at::Tensor forward(const at::Tensor& images) override { return outputs(images, false).front(); }
  std::vector<at::Tensor> forward_outputs(const at::Tensor& images) override { return outputs(images, is_training()); }

 private:
  std::vector<at::Tensor> outputs(const at::Tensor& images, bool with_aux) {
    const std::vector<int64_t> size{images.size(2), images.size(3)};
    at::Tensor x = trunk_.stem(images), layer3;
    for (size_t i = 0; i < trunk_.block_count(); ++i) {
      x = run_block(i, x);
      if (i == trunk_.last_block_of(3)) layer3 = x;
    }
    std::vector<at::Tensor> out{resized(classifier_->forward(x), size)};
    if (with_aux) out.push_back(resized(aux_classifier_->forward(layer3), size));
    return out;
  }

  std::shared_ptr<nn::Module> backbone_;
  ResNetTrunk trunk_;
  nn::Sequential classifier_{nullptr}, aux_classifier_{nullptr};
};

}  // namespace
}  // namespace resnet_segmentation_model

std::shared_ptr<Classifier> make_resnet_segmentation(SegmentationHead head, int depth, const ModelSpec& spec, int64_t in_channels) {
  return std::make_shared<resnet_segmentation_model::ResNetSegmentation>(head, depth, spec, in_channels);
}

}  // namespace cvtrain
