// A test program for the parity checks against timm and torchvision (tests/parity): builds a
// cvtrain model, loads a safetensors file with the reference's key names, runs the given images
// once in eval mode and once forward + backward in training mode, and writes what came out.
//   model_probe ARCH WEIGHTS INPUTS OUTPUT [--grad-checkpointing]
// INPUTS holds "images" [B,C,H,W] and "loss_weights" [B,K]; the loss is sum(logits * loss_weights).
// OUTPUT holds "eval_logits", "train_logits", "grad/<param>" and "buffer/<name>" after the step.
#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <iostream>
#include <map>
#include <string>

#include "cvtrain/core/error.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/models/pretrained.h"
#include "cvtrain/models/safetensors.h"
#include "cvtrain/recipe/recipe.h"

namespace {

using cvtrain::NamedTensors;

std::map<std::string, at::Tensor> read_map(const std::string& path) {
  std::map<std::string, at::Tensor> tensors;
  for (auto& [name, tensor] : cvtrain::read_safetensors(path)) tensors.emplace(name, tensor);
  return tensors;
}

NamedTensors probe(cvtrain::Classifier& model, const at::Tensor& images, const at::Tensor& loss_weights) {
  NamedTensors out;
  model.eval();
  {
    torch::NoGradGuard no_grad;
    out.emplace_back("eval_logits", model.forward(images));
  }
  model.train();
  const at::Tensor logits = model.forward(images);
  (logits * loss_weights).sum().backward();
  out.emplace_back("train_logits", logits.detach());
  for (const auto& p : model.named_parameters()) out.emplace_back("grad/" + p.key(), p.value().grad());
  for (const auto& b : model.named_buffers()) out.emplace_back("buffer/" + b.key(), b.value());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::cerr << "usage: model_probe ARCH WEIGHTS INPUTS OUTPUT [--grad-checkpointing]\n";
    return 2;
  }
  try {
    const auto inputs = read_map(argv[3]);
    const at::Tensor images = inputs.at("images"), loss_weights = inputs.at("loss_weights");
    cvtrain::ModelSpec spec;
    spec.arch = argv[1];
    spec.num_classes = loss_weights.size(1);
    spec.image_size = images.size(2);
    spec.grad_checkpointing = argc > 5 && std::string(argv[5]) == "--grad-checkpointing";
    auto model = cvtrain::build_model(spec, images.size(1));
    cvtrain::load_pretrained(*model, argv[2], /*strict=*/true);
    cvtrain::write_safetensors(argv[4], probe(*model, images, loss_weights));
  } catch (const std::exception& e) {
    std::cerr << "model_probe: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
