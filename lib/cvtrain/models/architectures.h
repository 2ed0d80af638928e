// Factories of each architecture, one per source file; registry.cpp maps names onto them.
#pragma once

#include <memory>
#include <string>

#include "cvtrain/models/classifier.h"

namespace cvtrain {

std::shared_ptr<Classifier> make_small_cnn(const ModelSpec& spec, int64_t in_channels);
// One hidden layer of 256, no normalisation or dropout: a baseline, and the model whose DDP and
// accumulation runs must equal a single large batch exactly.
std::shared_ptr<Classifier> make_mlp(const ModelSpec& spec, int64_t in_channels);
// depth: 18, 34, 50 or 101 (torchvision layout and parameter names).
std::shared_ptr<Classifier> make_resnet(int depth, const ModelSpec& spec, int64_t in_channels);
// torchvision's deeplabv3_resnet50/101 and fcn_resnet50/101 (output stride 8, the auxiliary FCN
// head on layer3); depth 18 and 34 are cvtrain's own small variants of the same layout.
enum class SegmentationHead { kDeepLabV3, kFcn };
std::shared_ptr<Classifier> make_resnet_segmentation(SegmentationHead head, int depth, const ModelSpec& spec, int64_t in_channels);
// SegFormer with the MiT encoder, variant b0, b1 or b2 (the published Hugging Face checkpoints' names).
std::shared_ptr<Classifier> make_segformer(const std::string& variant, const ModelSpec& spec, int64_t in_channels);
// variant: tiny or small (timm layout and parameter names).
std::shared_ptr<Classifier> make_convnext(const std::string& variant, const ModelSpec& spec, int64_t in_channels);
// variant: tiny, small, base or large, patch 16 (timm layout and parameter names).
std::shared_ptr<Classifier> make_vit(const std::string& variant, const ModelSpec& spec, int64_t in_channels);
// variant: tiny or small, patch 4, window 7 (timm layout and parameter names).
std::shared_ptr<Classifier> make_swin(const std::string& variant, const ModelSpec& spec, int64_t in_channels);

}  // namespace cvtrain
