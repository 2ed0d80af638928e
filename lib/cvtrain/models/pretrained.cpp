// load_pretrained: name-by-name copy with the two adaptations fine-tuning needs.
#include "cvtrain/models/pretrained.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/utils.h>

#include <cmath>
#include <map>

#include "cvtrain/core/error.h"
#include "cvtrain/core/text.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/models/safetensors.h"

namespace cvtrain {
namespace {

// A list of tensor names for a message: the first few and how many more (a wrong architecture
// misses hundreds).
std::string first_names(const std::vector<std::string>& names) {
  constexpr size_t kShown = 8;
  if (names.empty()) return "none";
  if (names.size() <= kShown) return join(names, ", ");
  return fmt::format("{}, and {} more", join({names.begin(), names.begin() + kShown}, ", "), names.size() - kShown);
}

// The classifier head: torchvision's ResNets' "fc.", timm's models' "head.", and in any model the
// module that holds the last parameter (cvtrain's small_cnn and mlp: their last Linear).
bool is_head(const std::string& name, const std::string& last_parameter) {
  const std::string last_module = last_parameter.substr(0, last_parameter.rfind('.') + 1);
  return name.rfind("fc.", 0) == 0 || name.rfind("head.", 0) == 0 || (!last_module.empty() && name.rfind(last_module, 0) == 0);
}

std::string shape_text(const at::Tensor& t) { return fmt::format("[{}]", fmt::join(t.sizes(), ", ")); }

// [1, 1 + n*n, D] -> [1, 1 + m*m, D]: the class token's row kept, the n x n grid resized to m x m
// as timm's resample_abs_pos_embed does when it loads weights at another size: bicubic with
// antialias (PyTorch's Pillow-style kernel, a = -0.5, widened when it shrinks), in fp32.
at::Tensor resize_position_embedding(const at::Tensor& source, const at::Tensor& target) {
  const int64_t width = source.size(2);
  const auto n = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(source.size(1) - 1))));
  const auto m = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(target.size(1) - 1))));
  if (n * n + 1 != source.size(1) || m * m + 1 != target.size(1) || width != target.size(2)) return at::Tensor();
  const at::Tensor grid = source.narrow(1, 1, n * n).reshape({1, n, n, width}).permute({0, 3, 1, 2}).to(at::kFloat);
  const at::Tensor resized = at::_upsample_bicubic2d_aa(grid, {m, m}, /*align_corners=*/false);
  return at::cat({source.narrow(1, 0, 1).to(at::kFloat), resized.permute({0, 2, 3, 1}).reshape({1, m * m, width})}, 1);
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

// The ImageNet classifier of a bare backbone's file: torchvision's "fc.", transformers' "classifier."
// (after the encoder prefix was added, "backbone.fc.").
bool is_backbone_head(const std::string& name, const std::string& prefix) {
  return starts_with(name, prefix + "fc.") || starts_with(name, "classifier.") || starts_with(name, "head.");
}

// A segmentation model's encoder weights alone: every file tensor that names one of the model's
// lies under the encoder prefix. torchvision's backbone files name no prefix: it is added when
// none of their names is the model's as they are but some are under the prefix.
bool adopt_encoder_file(std::map<std::string, at::Tensor>& saved, const std::vector<std::pair<std::string, at::Tensor>>& targets,
                        const std::string& prefix) {
  if (prefix.empty() || saved.empty()) return false;
  std::map<std::string, bool> model_names;
  for (const auto& [name, tensor] : targets) model_names[name] = true;
  const auto matches = [&](const std::string& name) { return model_names.count(name) > 0; };
  bool any_direct = false, any_prefixed = false;
  for (const auto& [name, tensor] : saved) {
    any_direct = any_direct || matches(name);
    any_prefixed = any_prefixed || matches(prefix + name);
  }
  if (!any_direct && any_prefixed) {
    std::map<std::string, at::Tensor> renamed;
    for (auto& [name, tensor] : saved) renamed.emplace(prefix + name, tensor);
    saved.swap(renamed);
  }
  bool any_encoder = false;
  for (const auto& [name, tensor] : saved) {
    if (matches(name) && !starts_with(name, prefix)) return false;  // the file has decoder tensors: a whole model
    any_encoder = any_encoder || matches(name);
  }
  return any_encoder;
}

}  // namespace

PretrainedReport load_pretrained(Classifier& model, const std::string& file, bool strict) {
  std::map<std::string, at::Tensor> saved;
  for (auto& [name, tensor] : read_safetensors(file)) saved.emplace(name, tensor);
  PretrainedReport report;
  torch::NoGradGuard no_grad;
  std::vector<std::pair<std::string, at::Tensor>> targets;
  for (const auto& item : model.named_parameters(true)) targets.emplace_back(item.key(), item.value());
  const std::string last_parameter = targets.empty() ? std::string() : targets.back().first;
  for (const auto& item : model.named_buffers(true)) targets.emplace_back(item.key(), item.value());
  const std::string encoder = model.encoder_prefix();
  report.encoder_only = adopt_encoder_file(saved, targets, encoder);
  for (auto& [name, target] : targets) {
    const auto it = saved.find(name);
    if (it == saved.end()) {
      (report.encoder_only && !starts_with(name, encoder) ? report.decoder : report.missing).push_back(name);
      continue;
    }
    at::Tensor source = it->second;
    saved.erase(it);
    if (source.sizes() != target.sizes()) {
      if (is_head(name, last_parameter)) {
        report.reinitialised.push_back(name);
        continue;
      }
      at::Tensor resized = name == "pos_embed" ? resize_position_embedding(source, target) : at::Tensor();
      if (!resized.defined())
        throw Error(fmt::format("{}: '{}' has shape {} but the model's is {}", file, name, shape_text(source), shape_text(target)));
      source = resized;
      report.position_embedding_resized = true;
    }
    target.copy_(source);
  }
  for (const auto& [name, tensor] : saved)
    (report.encoder_only && is_backbone_head(name, encoder) ? report.dropped_head : report.unexpected).push_back(name);
  if (strict && (!report.missing.empty() || !report.unexpected.empty()))
    throw Error(fmt::format("{}: does not match the model (model.pretrained_strict: false loads it anyway); missing: {}; "
                            "unexpected: {}",
                            file, first_names(report.missing), first_names(report.unexpected)));
  return report;
}

}  // namespace cvtrain
