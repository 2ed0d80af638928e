// The architecture table and the model section's checks against it (see arch_traits.h).
#include "cvtrain/models/arch_traits.h"

#include <fmt/format.h>

#include "cvtrain/core/text.h"

namespace cvtrain {
namespace {

ArchTraits resnet(const std::string& name) { return ArchTraits{name, "ResNets", true, true, true, 0, KeyNames::kTorchvision}; }
ArchTraits vit(const std::string& name) { return ArchTraits{name, "ViTs", false, true, true, 16, KeyNames::kTimm}; }
ArchTraits segmentation(const std::string& name, const char* family, KeyNames keys) {
  ArchTraits arch{name, family, false, true, true, 0, keys};
  arch.per_pixel = true;
  return arch;
}
ArchTraits deeplabv3(const std::string& name, KeyNames keys) {
  ArchTraits arch = segmentation(name, "DeepLabV3s", keys);
  arch.pooled_batch_norm = true;
  return arch;
}
ArchTraits segformer(const std::string& name) { return segmentation(name, "SegFormers", KeyNames::kTransformers); }
ArchTraits swin(const std::string& name) { return ArchTraits{name, "Swins", false, true, true, 4, KeyNames::kTimm}; }
ArchTraits convnext(const std::string& name) { return ArchTraits{name, "ConvNeXts", false, true, true, 0, KeyNames::kTimm}; }

// The families that have a switch, for "only ResNets have it": in table order, each once.
std::string families_with(bool ArchTraits::*has) {
  std::vector<std::string> families;
  for (const auto& arch : architectures())
    if (arch.*has && std::find(families.begin(), families.end(), arch.family) == families.end()) families.push_back(arch.family);
  if (families.size() <= 1) return families.empty() ? std::string() : families.front();
  const std::string last = families.back();
  families.pop_back();
  return fmt::format("{} and {}", join(families, ", "), last);
}

}  // namespace

const std::vector<ArchTraits>& architectures() {
  static const std::vector<ArchTraits> table = {
      convnext("convnext_small"),
      convnext("convnext_tiny"),
      deeplabv3("deeplabv3_resnet101", KeyNames::kTorchvision),
      deeplabv3("deeplabv3_resnet18", KeyNames::kCvtrain),
      deeplabv3("deeplabv3_resnet50", KeyNames::kTorchvision),
      segmentation("fcn_resnet101", "FCNs", KeyNames::kTorchvision),
      segmentation("fcn_resnet18", "FCNs", KeyNames::kCvtrain),
      segmentation("fcn_resnet50", "FCNs", KeyNames::kTorchvision),
      {"mlp", "MLPs"},
      resnet("resnet101"),
      resnet("resnet18"),
      resnet("resnet34"),
      resnet("resnet50"),
      segformer("segformer_b0"),
      segformer("segformer_b1"),
      segformer("segformer_b2"),
      {"small_cnn", "small CNNs"},
      swin("swin_small_patch4_window7"),
      swin("swin_tiny_patch4_window7"),
      vit("vit_base_patch16"),
      vit("vit_large_patch16"),
      vit("vit_small_patch16"),
      vit("vit_tiny_patch16"),
  };
  return table;
}

const ArchTraits* arch_traits(const std::string& name) {
  for (const auto& arch : architectures())
    if (arch.name == name) return &arch;
  return nullptr;
}

std::string reference_model_name(const ArchTraits& arch) {
  if (arch.keys == KeyNames::kTransformers) return "nvidia/mit-" + arch.name.substr(arch.name.rfind('_') + 1);  // segformer_b0
  return arch.keys == KeyNames::kTimm && arch.patch > 0 ? arch.name + "_224" : arch.name;
}

std::string reference_model(const ArchTraits& arch) {
  switch (arch.keys) {
    case KeyNames::kTorchvision:
      return "torchvision " + reference_model_name(arch);
    case KeyNames::kTimm:
      return "timm " + reference_model_name(arch);
    case KeyNames::kTransformers:
      return "transformers " + reference_model_name(arch);
    case KeyNames::kCvtrain:
      break;
  }
  return "cvtrain's own";
}

std::string architecture_table() {
  std::string table =
      fmt::format("{:<27}{:<15}{:<37}{:<43}{}\n", "model.arch", "task", "weights named as", "model.* switches", "model.image_size");
  for (const ArchTraits& arch : architectures()) {
    std::vector<std::string> switches;
    if (arch.small_stem) switches.push_back("small_stem");
    if (arch.drop_path) switches.push_back("drop_path");
    if (arch.residual_blocks) switches.push_back("grad_checkpointing");
    table +=
        fmt::format("{:<27}{:<15}{:<37}{:<43}{}\n", arch.name, arch.per_pixel ? "segmentation" : "classification", reference_model(arch),
                    switches.empty() ? "-" : join(switches, ", "), arch.patch > 0 ? fmt::format("a multiple of {}", arch.patch) : "any");
  }
  return table +
         "Every model also takes num_classes, image_size, in_channels, sync_bn, pretrained and pretrained_strict.\n"
         "Weights named as torchvision's, timm's or transformers' load into that library as they are (cvtrain export),\n"
         "and model.pretrained takes theirs.\n";
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& arch : architectures()) names.push_back(arch.name);
  return names;
}

std::vector<KeyProblem> model_problems(const ModelSpec& spec, TaskKind task) {
  const ArchTraits* arch = arch_traits(spec.arch);
  if (!arch) {
    const std::string guess = closest_match(spec.arch, model_names());
    return {{"model.arch", fmt::format("unknown model '{}'{}; known: {}", spec.arch,
                                       guess.empty() ? "" : fmt::format(" (did you mean '{}'?)", guess), join(model_names(), ", "))}};
  }
  std::vector<KeyProblem> problems;
  const bool segmentation = task == TaskKind::kSegmentation;
  if (arch->per_pixel != segmentation) {
    std::vector<std::string> fitting;
    for (const auto& other : architectures())
      if (other.per_pixel == segmentation) fitting.push_back(other.name);
    problems.push_back({"model.arch", fmt::format("{} is a {} model and task is {}; for {}: {}", spec.arch,
                                                  arch->per_pixel ? "segmentation" : "classification", name_of(task), name_of(task),
                                                  join(fitting, ", "))});
  }
  if (spec.small_stem && !arch->small_stem)
    problems.push_back({"model.small_stem", fmt::format("only {} have it, not {}", families_with(&ArchTraits::small_stem), spec.arch)});
  if (spec.drop_path > 0 && !arch->drop_path)
    problems.push_back({"model.drop_path", fmt::format("only {} have it, not {}", families_with(&ArchTraits::drop_path), spec.arch)});
  if (spec.grad_checkpointing && !arch->residual_blocks)
    problems.push_back({"model.grad_checkpointing", fmt::format("{} has no residual blocks to recompute; {} do", spec.arch,
                                                                families_with(&ArchTraits::residual_blocks))});
  if (arch->patch > 0 && spec.image_size % arch->patch != 0)
    problems.push_back({"model.image_size", fmt::format("{} is not a multiple of the patch size {} of {}", spec.image_size, arch->patch,
                                                        spec.arch)});
  return problems;
}

std::vector<KeyProblem> recipe_model_problems(const Recipe& recipe, int world) {
  std::vector<KeyProblem> problems = model_problems(recipe.model, recipe.task);
  const ArchTraits* arch = arch_traits(recipe.model.arch);
  const bool shared = recipe.model.sync_bn && world > 1;
  // Under micro_batch: auto, micro_batch is global / world until the search: 1 leaves it nothing else.
  if (arch && arch->pooled_batch_norm && recipe.train.micro_batch == 1 && !shared)
    problems.push_back(
        {"train.micro_batch",
         fmt::format("1 image per rank cannot train {}: the BatchNorm after its ASPP's image pooling sees one value per channel, "
                     "and PyTorch stops with \"Expected more than 1 value per channel when training\"; give each rank 2 or more "
                     "images, or share its statistics across ranks with model.sync_bn: true{}",
                     recipe.model.arch, world > 1 ? "" : " (on 2 or more ranks)")});
  return problems;
}

}  // namespace cvtrain
