// Reading back the model.pt a training run wrote, for end-to-end comparisons of weights.
#pragma once

#include <ATen/ATen.h>
#include <torch/serialize.h>

#include <string>
#include <vector>

#include "cvtrain/models/classifier.h"
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

}  // namespace cvtrain::testing
