// Optimizer construction from OptimSpec: SGD (momentum, Nesterov) or AdamW, with weight decay kept
// off normalisation weights and biases.
#pragma once

#include <memory>

namespace torch::nn {
class Module;
}
namespace torch::optim {
class Optimizer;
}

namespace cvtrain {

struct OptimSpec;

std::unique_ptr<torch::optim::Optimizer> build_optimizer(const OptimSpec& spec, torch::nn::Module& model);
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

}  // namespace cvtrain
