// Reading back the model.pt a training run wrote, for end-to-end comparisons of weights.
#pragma once

#include <ATen/ATen.h>
#include <torch/serialize.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "cvtrain/models/classifier.h"
#include "cvtrain/models/safetensors.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain::testing {

inline std::shared_ptr<cvtrain::Classifier> quickstart_mlp() {
  cvtrain::ModelSpec spec;
  spec.arch = "mlp";
  spec.image_size = 28;
  spec.num_classes = 10;
  return cvtrain::build_model(spec, 1);
}

// The quickstart-shaped MLP's parameters as a run with train.seed `seed` starts from (the run
// builder seeds torch right before it builds the model).
inline std::vector<at::Tensor> initial_mlp_weights(int64_t seed = 0) {
  torch::manual_seed(static_cast<uint64_t>(seed));
  return quickstart_mlp()->parameters();
}

// The parameters of the quickstart-shaped MLP (28x28, 1 channel, 10 classes) saved at `path`.
inline std::vector<at::Tensor> mlp_weights(const std::string& path) {
  auto model = quickstart_mlp();
  torch::serialize::InputArchive archive;
  archive.load_from(path);
  model->load(archive);
  return model->parameters();
}

// The largest absolute difference between two lists of tensors, element by element.
inline double max_difference(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, (a[i].to(at::kDouble) - b[i].to(at::kDouble)).abs().max().item<double>());
  return worst;
}

// Between the quickstart-shaped MLPs of two model.pt files.
inline double max_mlp_difference(const std::string& a, const std::string& b) { return max_difference(mlp_weights(a), mlp_weights(b)); }

// Between two safetensors files (a checkpoint's model.safetensors), tensor by name.
inline double max_checkpoint_difference(const std::string& a, const std::string& b) {
  std::map<std::string, at::Tensor> first;
  for (auto& [name, tensor] : cvtrain::read_safetensors(a)) first.emplace(name, tensor);
  double worst = 0;
  for (auto& [name, tensor] : cvtrain::read_safetensors(b))
    worst = std::max(worst, (first.at(name).to(at::kDouble) - tensor.to(at::kDouble)).abs().max().item<double>());
  return worst;
}

// How many numbers a safetensors file holds (a model's parameters and buffers).
inline int64_t checkpoint_numel(const std::string& path) {
  int64_t numel = 0;
  for (auto& [name, tensor] : cvtrain::read_safetensors(path)) numel += tensor.numel();
  return numel;
}

}  // namespace cvtrain::testing
