// The model interface the trainer sees: an nn::Module mapping images [B,C,H,W] to logits [B,K].
#pragma once

#include <torch/nn/module.h>

#include <memory>

namespace cvtrain {

struct ModelSpec;

class Classifier : public torch::nn::Module {
 public:
  virtual at::Tensor forward(const at::Tensor& images) = 0;
  // Convolutional models run faster on channels_last (NHWC) inputs and weights.
  virtual bool is_convolutional() const { return false; }
};

// Builds model.arch (see model_names()); throws RecipeError for an unknown name.
std::shared_ptr<Classifier> build_model(const ModelSpec& spec, int64_t in_channels);

}  // namespace cvtrain
