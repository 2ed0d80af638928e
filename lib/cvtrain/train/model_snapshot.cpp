// Saving and restoring a model's buffers and the random generators (see model_snapshot.h).
#include "cvtrain/train/model_snapshot.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <mutex>

namespace cvtrain {
namespace {

at::Tensor state_of(const c10::Device& d) {
  at::Generator generator = at::globalContext().defaultGenerator(d);
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

}  // namespace

ModelSnapshot::ModelSnapshot(torch::nn::Module& model, const c10::Device& device) : model_(model), device_(device) {
  for (const auto& b : model.buffers()) buffers_.push_back(b.clone());
  for (const c10::Device& d : {c10::Device(c10::kCPU), device}) generators_.push_back(state_of(d));
}

ModelSnapshot::~ModelSnapshot() {
  torch::NoGradGuard no_grad;
  auto buffers = model_.buffers();
  for (size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(buffers_[i]);
  size_t i = 0;
  for (const c10::Device& d : {c10::Device(c10::kCPU), device_}) {
    at::Generator generator = at::globalContext().defaultGenerator(d);
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(generators_[i++]);
  }
}

}  // namespace cvtrain
