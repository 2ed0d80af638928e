// A test program for tests/parity/check_layer_decay.py: the learning-rate scale optim.layer_decay
// gives each parameter of a model, one "NAME SCALE" line each.
//   layer_decay_probe ARCH DECAY
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "cvtrain/models/classifier.h"
#include "cvtrain/optim/layer_decay.h"
#include "cvtrain/recipe/recipe.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: layer_decay_probe ARCH DECAY\n";
    return 2;
  }
  try {
    cvtrain::ModelSpec spec;
    spec.arch = argv[1];
    spec.num_classes = 1000;
    spec.image_size = 224;
    const auto model = cvtrain::build_model(spec, 3);
    std::vector<std::string> names;
    for (const auto& p : model->named_parameters()) names.push_back(p.key());
    const std::vector<double> scales = cvtrain::layer_decay_scales(names, spec.arch, std::stod(argv[2]));
    for (size_t i = 0; i < names.size(); ++i) std::printf("%s %.17g\n", names[i].c_str(), scales[i]);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "layer_decay_probe: " << e.what() << "\n";
    return 1;
  }
}
