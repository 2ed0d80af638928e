// The body of torchvision's ResNets (stem, layer1..layer4), registered on the module that owns it so
// that its parameters keep torchvision's names under that module: the classifier's own (`conv1`,
// `layer1.0.conv1`) or a segmentation model's backbone (`backbone.conv1`). Optionally dilated to
// output stride 8, as torchvision's replace_stride_with_dilation=[False, True, True].
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <memory>
#include <vector>

#include "cvtrain/models/recompute.h"

namespace cvtrain {

struct ModelSpec;

class ResNetTrunk {
 public:
  // depth 18, 34, 50 or 101. Registers conv1, bn1 and layer1..layer4 on `owner`.
  ResNetTrunk(torch::nn::Module& owner, int depth, const ModelSpec& spec, int64_t in_channels, bool output_stride_8);
  // conv1, bn1, ReLU and (unless model.small_stem) the max-pool: the input of the first block.
  at::Tensor stem(const at::Tensor& images) const;
  // The residual blocks of layer1..layer4 in forward order (the owner runs them through its
  // Classifier::run_block, for recomputation and FSDP's gathering).
  size_t block_count() const { return blocks_.size(); }
  torch::nn::Module& block_module(size_t index) const;
  RecomputableBlock& block(size_t index) const;
  // The index of layer `stage`'s (1..4) last block, and the channels that layer puts out.
  size_t last_block_of(int stage) const { return stage_ends_[static_cast<size_t>(stage - 1)] - 1; }
  int64_t channels_of(int stage) const { return channels_[static_cast<size_t>(stage - 1)]; }
  // torchvision's initialisation of every convolution and BatchNorm under `module`.
  static void initialise(torch::nn::Module& module);

 private:
  struct Parts;
  std::shared_ptr<Parts> parts_;
  std::vector<std::shared_ptr<torch::nn::Module>> blocks_;
  std::vector<RecomputableBlock*> recomputable_;
  std::vector<size_t> stage_ends_;
  std::vector<int64_t> channels_;
};

}  // namespace cvtrain
