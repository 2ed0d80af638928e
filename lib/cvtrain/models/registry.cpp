// The model registry: architecture name -> factory (the facts about each, torch-free, are in
// arch_traits.cpp; models_test checks that the two lists agree).
#include "cvtrain/models/arch_traits.h"

#include <fmt/format.h>

#include <functional>
#include <map>

#include "cvtrain/core/error.h"
#include "cvtrain/core/text.h"
#include "cvtrain/models/architectures.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {
namespace {

using Factory = std::function<std::shared_ptr<Classifier>(const ModelSpec&, int64_t)>;

const std::map<std::string, Factory>& factories() {
  static const std::map<std::string, Factory> table = {
      {"small_cnn", make_small_cnn},
      {"mlp", make_mlp},
      {"resnet18", [](const ModelSpec& s, int64_t c) { return make_resnet(18, s, c); }},
      {"resnet34", [](const ModelSpec& s, int64_t c) { return make_resnet(34, s, c); }},
      {"resnet50", [](const ModelSpec& s, int64_t c) { return make_resnet(50, s, c); }},
      {"resnet101", [](const ModelSpec& s, int64_t c) { return make_resnet(101, s, c); }},
      {"deeplabv3_resnet18",
       [](const ModelSpec& s, int64_t c) { return make_resnet_segmentation(SegmentationHead::kDeepLabV3, 18, s, c); }},
      {"deeplabv3_resnet50",
       [](const ModelSpec& s, int64_t c) { return make_resnet_segmentation(SegmentationHead::kDeepLabV3, 50, s, c); }},
      {"deeplabv3_resnet101",
       [](const ModelSpec& s, int64_t c) { return make_resnet_segmentation(SegmentationHead::kDeepLabV3, 101, s, c); }},
      {"fcn_resnet18", [](const ModelSpec& s, int64_t c) { return make_resnet_segmentation(SegmentationHead::kFcn, 18, s, c); }},
      {"fcn_resnet50", [](const ModelSpec& s, int64_t c) { return make_resnet_segmentation(SegmentationHead::kFcn, 50, s, c); }},
      {"fcn_resnet101", [](const ModelSpec& s, int64_t c) { return make_resnet_segmentation(SegmentationHead::kFcn, 101, s, c); }},
      {"segformer_b0", [](const ModelSpec& s, int64_t c) { return make_segformer("b0", s, c); }},
      {"segformer_b1", [](const ModelSpec& s, int64_t c) { return make_segformer("b1", s, c); }},
      {"segformer_b2", [](const ModelSpec& s, int64_t c) { return make_segformer("b2", s, c); }},
      {"convnext_tiny", [](const ModelSpec& s, int64_t c) { return make_convnext("tiny", s, c); }},
      {"convnext_small", [](const ModelSpec& s, int64_t c) { return make_convnext("small", s, c); }},
      {"swin_tiny_patch4_window7", [](const ModelSpec& s, int64_t c) { return make_swin("tiny", s, c); }},
      {"swin_small_patch4_window7", [](const ModelSpec& s, int64_t c) { return make_swin("small", s, c); }},
      {"vit_tiny_patch16", [](const ModelSpec& s, int64_t c) { return make_vit("tiny", s, c); }},
      {"vit_small_patch16", [](const ModelSpec& s, int64_t c) { return make_vit("small", s, c); }},
      {"vit_base_patch16", [](const ModelSpec& s, int64_t c) { return make_vit("base", s, c); }},
      {"vit_large_patch16", [](const ModelSpec& s, int64_t c) { return make_vit("large", s, c); }},
  };
  return table;
}

}  // namespace

std::vector<std::string> registered_model_names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : factories()) names.push_back(name);
  return names;
}

std::shared_ptr<Classifier> build_model(const ModelSpec& spec, int64_t in_channels) {
  const auto it = factories().find(spec.arch);
  if (it == factories().end()) {
    // A recipe's model.arch was checked against the table when it loaded (model_problems).
    throw Error(fmt::format("model.arch: no factory builds '{}'; known: {}", spec.arch, join(registered_model_names(), ", ")));
  }
  return it->second(spec, in_channels);
}

}  // namespace cvtrain
