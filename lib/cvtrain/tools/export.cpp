// export_weights: find the checkpoint, read its weights and recipe, cast, write.
#include "cvtrain/tools/export.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include "cvtrain/core/error.h"
#include "cvtrain/core/text_file.h"
#include "cvtrain/models/arch_traits.h"
#include "cvtrain/models/safetensors.h"
#include "cvtrain/recipe/recipe_loader.h"
#include "cvtrain/train/checkpoint.h"

namespace cvtrain {
namespace {

namespace fs = std::filesystem;

std::optional<at::ScalarType> target_type(const std::string& dtype) {
  if (dtype == "fp32") return at::kFloat;
  if (dtype == "bf16") return at::kBFloat16;
  if (dtype == "fp16") return at::kHalf;
  if (dtype == "keep") return std::nullopt;
  throw Error(fmt::format("--dtype: '{}' is not one of keep, fp32, bf16, fp16", dtype));
}

std::string checkpoint_text(const std::string& path) {
  const std::optional<std::string> text = read_text_file(path);
  if (!text) throw Error(fmt::format("{}: cannot read", path));
  return *text;
}

// "format": "pt" as safetensors.torch writes it; the rest tells where the weights came from and
// what `cvtrain predict --weights` needs (export.h).
std::map<std::string, std::string> export_metadata(ExportResult& result) {
  std::map<std::string, std::string> metadata{{"format", "pt"},
                                              {"arch", result.arch},
                                              {"step", std::to_string(result.step)},
                                              {kRecipeMetadata, checkpoint_text(result.checkpoint + "/recipe.yaml")}};
  const std::string classes = result.checkpoint + "/" + kClassNamesFile;
  if (fs::exists(classes)) {
    metadata[kClassNamesMetadata] = checkpoint_text(classes);
    const std::string& names = metadata[kClassNamesMetadata];
    result.class_names = std::count(names.begin(), names.end(), '\n');
  }
  return metadata;
}

// transformers 5 renames the published SegFormer names as from_pretrained reads them (load_state_dict
// would not): the file goes into a folder as model.safetensors beside the configuration.
std::string transformers_hint(const ExportResult& r, const std::string& out) {
  const std::string variant = r.arch.substr(r.arch.rfind('_') + 1);
  std::string sizes;
  if (variant != "b0") sizes += ", hidden_sizes=[64, 128, 320, 512]";
  if (variant == "b2") sizes += ", depths=[3, 4, 6, 3], decoder_hidden_size=768";
  if (r.in_channels != 3) sizes += fmt::format(", num_channels={}", r.in_channels);
  const fs::path path(out);
  const std::string folder = path.parent_path().empty() ? "." : path.parent_path().string();
  const std::string rename =
      path.filename() == "model.safetensors" ? "" : fmt::format("# transformers reads {}/model.safetensors: rename {} so\n", folder, out);
  return fmt::format(
      "{}import transformers\ntransformers.SegformerConfig(num_labels={}{}).save_pretrained('{}')\n"
      "model = transformers.SegformerForSemanticSegmentation.from_pretrained('{}')",
      rename, r.num_classes, sizes, folder, folder);
}

}  // namespace

ExportResult export_weights(const std::string& source, const std::string& out, const std::string& dtype, bool ema) {
  const std::optional<at::ScalarType> type = target_type(dtype);
  ExportResult result;
  result.checkpoint = checkpoint_folder_of(source);
  LoadOptions options;
  options.check_paths = false;
  options.saved_by_run = true;
  const Recipe recipe = load_recipe(result.checkpoint + "/recipe.yaml", options);
  result.arch = recipe.model.arch;
  result.num_classes = recipe.model.num_classes;
  result.image_size = recipe.model.image_size;
  result.small_stem = recipe.model.small_stem;
  result.step = read_position(result.checkpoint).step;
  const std::string file = result.checkpoint + "/" + (ema ? kEmaFile : "model.safetensors");
  if (ema && !fs::exists(file))
    throw Error(fmt::format("{} holds no weight average (the run had train.ema off); export without --ema", result.checkpoint));
  result.ema = ema;
  NamedTensors weights = read_safetensors(file);
  for (auto& [name, tensor] : weights) {
    if (type && tensor.is_floating_point()) tensor = tensor.to(*type);
    result.values += tensor.numel();
  }
  result.tensors = static_cast<int64_t>(weights.size());
  // The input channels of the first layer's weight ([out, in, kh, kw]), for the loading hint.
  for (const auto& [name, tensor] : weights)
    if (tensor.dim() == 4) {
      result.in_channels = tensor.size(1);
      break;
    }
  const fs::path folder = fs::path(out).parent_path();
  std::error_code ec;
  if (!folder.empty()) fs::create_directories(folder, ec);
  if (ec) throw Error(fmt::format("{}: cannot create the folder for {} ({})", folder.string(), out, ec.message()));
  write_safetensors(out, weights, export_metadata(result));
  return result;
}

std::string loading_hint(const ExportResult& r, const std::string& out) {
  const std::string classes = std::to_string(r.num_classes);
  const ArchTraits* traits = arch_traits(r.arch);
  const KeyNames keys = traits ? traits->keys : KeyNames::kCvtrain;
  if (keys == KeyNames::kTorchvision) {
    if (r.small_stem || r.in_channels != 3)
      return "torchvision has no ResNet with model.small_stem or other than 3 input channels; load it with model.pretrained";
    if (traits->per_pixel)  // with the auxiliary head the weights carry
      return fmt::format(
          "import torchvision, safetensors.torch\nmodel = torchvision.models.segmentation.{}(weights=None, weights_backbone=None, "
          "num_classes={}, aux_loss=True)\nmodel.load_state_dict(safetensors.torch.load_file('{}'))",
          r.arch, classes, out);
    return fmt::format(
        "import torchvision, safetensors.torch\nmodel = torchvision.models.{}(num_classes={})\n"
        "model.load_state_dict(safetensors.torch.load_file('{}'))",
        r.arch, classes, out);
  }
  if (keys == KeyNames::kTransformers) return transformers_hint(r, out);
  if (keys == KeyNames::kTimm) {
    const bool built_for_224 = traits->patch > 0;  // ViTs and Swins: timm builds them for the size in their name
    const std::string timm_name = reference_model_name(*traits);
    std::string extra;
    if (built_for_224 && r.image_size != 224) extra += fmt::format(", img_size={}", r.image_size);
    if (r.in_channels != 3) extra += fmt::format(", in_chans={}", r.in_channels);
    return fmt::format(
        "import timm\nmodel = timm.create_model('{}', pretrained=True, num_classes={}{},\n"
        "                          pretrained_cfg_overlay=dict(file='{}', num_classes={}))",
        timm_name, classes, extra, out, classes);
  }
  return fmt::format(
      "{} is cvtrain's own architecture (no torchvision or timm model); start another run from it with "
      "model.pretrained: {}",
      r.arch, out);
}

}  // namespace cvtrain
