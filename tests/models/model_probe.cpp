// A test program for the parity checks against timm and torchvision (tests/parity): builds a
// cvtrain model, loads a safetensors file with the reference's key names, runs the given images
// once in eval mode and once forward + backward in training mode, and writes what came out.
//   model_probe ARCH WEIGHTS INPUTS OUTPUT [--grad-checkpointing | --checkpointed-out OUTPUT2]
// INPUTS holds "images" [B,C,H,W] and "loss_weights" shaped as the logits ([B,K], or [B,K,H,W] for a
// segmentation model); the loss is sum(logits * loss_weights), plus sum(aux_logits * loss_weights)
// for a model with an auxiliary head. OUTPUT holds "eval_logits", "train_logits" (and
// "eval_aux_logits", "train_aux_logits"), "grad/<param>" and "buffer/<name>" after the step.
// Dropout is off (p = 0) on both sides: its draws cannot match across two programs.
// --checkpointed-out runs the same model again from the same weights and buffers with activation
// checkpointing and writes that to OUTPUT2: one build and load for both.
#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/dropout.h>

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

// The outputs of one forward, as "PREFIX_logits" and "PREFIX_aux_logits".
void add_outputs(NamedTensors& out, const std::string& prefix, const std::vector<at::Tensor>& outputs) {
  out.emplace_back(prefix + "_logits", outputs[0].detach());
  if (outputs.size() > 1) out.emplace_back(prefix + "_aux_logits", outputs[1].detach());
}

NamedTensors probe(cvtrain::Classifier& model, const at::Tensor& images, const at::Tensor& loss_weights) {
  for (const auto& module : model.modules())
    if (auto* dropout = module->as<torch::nn::DropoutImpl>()) dropout->options.p(0);
  NamedTensors out;
  model.eval();
  {
    torch::NoGradGuard no_grad;
    add_outputs(out, "eval", model.forward_outputs(images));  // the main head alone: auxiliary ones train only
  }
  model.train();
  const std::vector<at::Tensor> outputs = model.forward_outputs(images);
  at::Tensor loss = (outputs[0] * loss_weights).sum();
  if (outputs.size() > 1) loss = loss + (outputs[1] * loss_weights).sum();
  loss.backward();
  add_outputs(out, "train", outputs);
  for (const auto& p : model.named_parameters()) out.emplace_back("grad/" + p.key(), p.value().grad());
  for (const auto& b : model.named_buffers()) out.emplace_back("buffer/" + b.key(), b.value());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string option = argc > 5 ? argv[5] : "";
  if (argc < 5 || (option == "--checkpointed-out" && argc < 7)) {
    std::cerr << "usage: model_probe ARCH WEIGHTS INPUTS OUTPUT [--grad-checkpointing | --checkpointed-out OUTPUT2]\n";
    return 2;
  }
  try {
    const auto inputs = read_map(argv[3]);
    const at::Tensor images = inputs.at("images"), loss_weights = inputs.at("loss_weights");
    cvtrain::ModelSpec spec;
    spec.arch = argv[1];
    spec.num_classes = loss_weights.size(1);
    spec.image_size = images.size(2);
    spec.grad_checkpointing = option == "--grad-checkpointing";
    auto model = cvtrain::build_model(spec, images.size(1));
    cvtrain::load_pretrained(*model, argv[2], /*strict=*/true);
    std::vector<at::Tensor> buffers_before;  // the training-mode forward moves BatchNorm's statistics
    for (const auto& b : model->named_buffers()) buffers_before.push_back(b.value().clone());
    cvtrain::write_safetensors(argv[4], probe(*model, images, loss_weights));
    if (option == "--checkpointed-out") {
      {
        torch::NoGradGuard no_grad;
        size_t i = 0;
        for (const auto& b : model->named_buffers()) b.value().copy_(buffers_before[i++]);
      }
      for (auto& p : model->parameters()) p.mutable_grad() = at::Tensor();
      model->set_grad_checkpointing(true);
      cvtrain::write_safetensors(argv[6], probe(*model, images, loss_weights));
    }
  } catch (const std::exception& e) {
    std::cerr << "model_probe: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
