// Two parameter groups: tensors of rank >= 2 (conv and linear weights) decay, the rest (norm
// weights, biases, layer scales) and ViT's position embedding and class token do not — timm's
// grouping, the standard recipe for both SGD and AdamW on vision models.
#include "cvtrain/optim/optimizer.h"

#include <torch/nn/module.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

std::unique_ptr<torch::optim::Optimizer> build_optimizer(const OptimSpec& spec, torch::nn::Module& model) {
  std::vector<at::Tensor> decay, no_decay;
  for (const auto& p : model.named_parameters()) {
    const bool embedding = p.key() == "pos_embed" || p.key() == "cls_token";
    (p.value().dim() >= 2 && !embedding ? decay : no_decay).push_back(p.value());
  }
  if (spec.name == "adamw") {
    auto options = [&](double wd) {
      return std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(spec.lr)
                                                              .betas({spec.betas.at(0), spec.betas.at(1)})
                                                              .eps(spec.eps)
                                                              .weight_decay(wd));
    };
    std::vector<torch::optim::OptimizerParamGroup> groups{{decay, options(spec.weight_decay)}, {no_decay, options(0.0)}};
    return std::make_unique<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(spec.lr));
  }
  auto options = [&](double wd) {
    return std::make_unique<torch::optim::SGDOptions>(
        torch::optim::SGDOptions(spec.lr).momentum(spec.momentum).nesterov(spec.nesterov).weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups{{decay, options(spec.weight_decay)}, {no_decay, options(0.0)}};
  return std::make_unique<torch::optim::SGD>(groups, torch::optim::SGDOptions(spec.lr));
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

}  // namespace cvtrain
