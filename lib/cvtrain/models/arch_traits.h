// The model registry's facts about each architecture, known without building one: the switches it
// takes, what its input size must be, and whose key names its weights use. Torch-free, so the
// recipe checks (through LoadOptions::check_model) and the tools read them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cvtrain/recipe/recipe_loader.h"

namespace cvtrain {

enum class KeyNames { kCvtrain, kTorchvision, kTimm, kTransformers };  // whose state-dict names the weights use

struct ArchTraits {
  std::string name;              // model.arch
  std::string family;            // plural, for messages: "ResNets", "ViTs", "ConvNeXts"
  bool small_stem = false;       // model.small_stem
  bool drop_path = false;        // model.drop_path (stochastic depth)
  bool residual_blocks = false;  // model.grad_checkpointing recomputes them
  int64_t patch = 0;             // model.image_size must be a multiple of it (0: any size)
  KeyNames keys = KeyNames::kCvtrain;
  bool per_pixel = false;  // a segmentation model: logits for every pixel ([B,K,H,W])
  // A BatchNorm after global pooling (DeepLabV3's ASPP image pooling): it sees one value per
  // channel and image, so training needs 2 or more images per BatchNorm.
  bool pooled_batch_norm = false;
};

// Every architecture build_model knows (tests check the two lists agree), sorted by name.
const std::vector<ArchTraits>& architectures();
// nullptr for a name no architecture has.
const ArchTraits* arch_traits(const std::string& name);
std::vector<std::string> model_names();

// The model whose state-dict names the weights use: "torchvision resnet50", "timm
// vit_base_patch16_224" (timm names its ViTs after the 224-pixel input), "transformers nvidia/mit-b0"
// (the Hugging Face checkpoint whose SegFormer configuration it has), "cvtrain's own".
std::string reference_model(const ArchTraits& arch);
// The timm or torchvision name alone ("vit_base_patch16_224"); the arch's own for cvtrain's.
std::string reference_model_name(const ArchTraits& arch);

// `cvtrain models`: one line per architecture, what its weights are named after, the model.*
// switches it takes and what input size it needs.
std::string architecture_table();

// What is wrong with a model section for its architecture: an unknown name (with a guess), a
// switch the architecture lacks, an image size its patches do not tile, a classifier for
// segmentation or a segmentation model for classification.
std::vector<KeyProblem> model_problems(const ModelSpec& spec, TaskKind task = TaskKind::kClassification);

// The above, and the training batch against the architecture: one image per rank (train.micro_batch)
// cannot train a pooled BatchNorm unless model.sync_bn shares its statistics over 2 or more ranks.
// What LoadOptions::check_model runs.
std::vector<KeyProblem> recipe_model_problems(const Recipe& recipe, int world);

}  // namespace cvtrain
