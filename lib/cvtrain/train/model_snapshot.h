// What a trial forward and backward (the micro-batch search, preflight) changes and must not:
// BatchNorm statistics and the random streams, saved when made and put back when destroyed, so
// that a run with such trials trains exactly as one without.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <vector>

namespace torch::nn {
class Module;
}

namespace cvtrain {

class ModelSnapshot {
 public:
  ModelSnapshot(torch::nn::Module& model, const c10::Device& device);
  ~ModelSnapshot();
  ModelSnapshot(const ModelSnapshot&) = delete;
  ModelSnapshot& operator=(const ModelSnapshot&) = delete;

 private:
  torch::nn::Module& model_;
  c10::Device device_;
  std::vector<at::Tensor> buffers_, generators_;
};

}  // namespace cvtrain
