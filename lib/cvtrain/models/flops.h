// Forward FLOPs per image, counted from the operators a forward pass actually runs (convolutions,
// linear layers, matrix products, attention), multiply-adds counted as 2. Used for utilisation
// reporting (achieved TFLOP/s) and checked against the published figures.
#pragma once

#include <cstdint>

namespace torch::nn {
class Module;
}

namespace cvtrain {

class Classifier;

// Runs one forward pass of a 1 x channels x image_size x image_size zero image on the CPU-side
// copy's device, in eval mode and without gradients, and counts. The model is left as it was.
double forward_flops_per_image(Classifier& model, int64_t channels, int64_t image_size);

}  // namespace cvtrain
