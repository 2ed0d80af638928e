// A test program for tests/parity/check_losses.py: cvtrain's training loss on given logits and
// targets, to be set against timm's loss modules.
//   loss_probe IN OUT KIND SMOOTHING THRESHOLD   IN: "logits" and "targets" (int64 or float); OUT: "loss"
#include <iostream>
#include <map>
#include <string>

#include "cvtrain/models/safetensors.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/train/classification_loss.h"

using namespace cvtrain;

int main(int argc, char** argv) {
  if (argc != 6) {
    std::cerr << "usage: loss_probe IN OUT KIND SMOOTHING THRESHOLD\n";
    return 2;
  }
  try {
    const NamedTensors in = read_safetensors(argv[1]);
    std::map<std::string, at::Tensor> t(in.begin(), in.end());
    const LossSettings settings{*enum_of<LossKind>(argv[3]), std::stod(argv[4]), std::stod(argv[5])};
    write_safetensors(argv[2], {{"loss", classification_loss(t.at("logits"), t.at("targets"), settings)}});
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "loss_probe: " << e.what() << "\n";
    return 1;
  }
}
