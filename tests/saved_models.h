// Reading back the model.pt a training run wrote, for end-to-end comparisons of weights.
#pragma once

#include <ATen/ATen.h>
#include <torch/serialize.h>

#include <string>
#include <vector>

#include "cvtrain/models/classifier.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain::testing {

// The parameters of the quickstart-shaped MLP (28x28, 1 channel, 10 classes) saved at `path`.
inline std::vector<at::Tensor> mlp_weights(const std::string& path) {
  cvtrain::ModelSpec spec;
  spec.arch = "mlp";
  spec.image_size = 28;
  spec.num_classes = 10;
  auto model = cvtrain::build_model(spec, 1);
  torch::serialize::InputArchive archive;
  archive.load_from(path);
  model->load(archive);
  return model->parameters();
}

}  // namespace cvtrain::testing
