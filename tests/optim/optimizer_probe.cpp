// A test program for tests/parity/check_optimizers.py: runs cvtrain's optimizer over given
// gradients, so its steps can be set against timm's and torch.optim's on the same tensors.
//   optimizer_probe IN OUT NAME LR WEIGHT_DECAY [KEY=VALUE ...]
// IN (safetensors): parameters "p.I" and the gradients of each step "g.S.I"; OUT: the parameters
// after the last step. KEY=VALUE are optim.* recipe keys (momentum=0.9, trust_clip=true, ...).
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <iostream>
#include <map>
#include <string>

#include "cvtrain/core/error.h"
#include "cvtrain/models/safetensors.h"
#include "cvtrain/optim/optimizer.h"
#include "cvtrain/recipe/recipe.h"

using namespace cvtrain;

namespace {

void set_option(OptimSpec& spec, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  const std::string key = assignment.substr(0, eq), value = assignment.substr(eq + 1);
  if (key == "momentum") spec.momentum = std::stod(value);
  else if (key == "nesterov") spec.nesterov = value == "true";
  else if (key == "trust_clip") spec.trust_clip = value == "true";
  else if (key == "trust_coeff") spec.trust_coeff = std::stod(value);
  else if (key == "max_grad_norm") spec.max_grad_norm = std::stod(value);
  else if (key == "eps") spec.eps = std::stod(value);
  else throw Error("unknown option " + key);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::cerr << "usage: optimizer_probe IN OUT NAME LR WEIGHT_DECAY [KEY=VALUE ...]\n";
    return 2;
  }
  try {
    const NamedTensors in = read_safetensors(argv[1]);
    std::map<std::string, at::Tensor> tensors(in.begin(), in.end());
    OptimSpec spec;
    spec.name = *enum_of<OptimizerKind>(argv[3]);
    spec.lr = std::stod(argv[4]);
    spec.weight_decay = std::stod(argv[5]);
    for (int i = 6; i < argc; ++i) set_option(spec, argv[i]);
    std::vector<at::Tensor> params;
    ParameterGroups groups;
    for (int i = 0; tensors.count("p." + std::to_string(i)); ++i) {
      at::Tensor p = tensors["p." + std::to_string(i)].clone().set_requires_grad(true);
      params.push_back(p);
      (decays("p", p) ? groups.decay : groups.no_decay).push_back(p);
    }
    auto optimizer = build_optimizer(spec, groups);
    for (int s = 0; tensors.count("g." + std::to_string(s) + ".0"); ++s) {
      for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = tensors["g." + std::to_string(s) + "." + std::to_string(i)].clone();
      optimizer->step();
    }
    NamedTensors out;
    for (size_t i = 0; i < params.size(); ++i) out.emplace_back("p." + std::to_string(i), params[i].detach());
    write_safetensors(argv[2], out);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "optimizer_probe: " << e.what() << "\n";
    return 1;
  }
}
