// train.ema: an fp32 moving average of the model's parameters and buffers, updated after each
// optimizer step as timm's ModelEmaV3 does (decay 0 at the first update, then `decay`, or with
// warm-up 1 - (1 + step)^(-2/3) up to it; integer buffers copied), evaluated beside the raw
// weights, kept in checkpoints and exported with `cvtrain export --ema`. Every rank holds it whole
// (single, ddp, zero1, zero2: the model's parameters are whole on every rank after each step).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cvtrain/models/safetensors.h"

namespace torch::nn {
class Module;
}

namespace cvtrain {

class Communicator;
struct EmaSpec;

class WeightEma {
 public:
  // Starts from a copy of `model`'s state, as ModelEmaV3's deepcopy at creation.
  WeightEma(const EmaSpec& spec, torch::nn::Module& model);

  // timm's get_decay(step) for the 1-based optimizer step just done.
  double decay_at(int64_t step) const;
  // After optimizer step `step`; every `every_steps` steps it moves toward the model.
  void update(int64_t step);

  // By the model's own names (parameters and buffers), as checkpoints store them.
  NamedTensors state() const;
  // Collective: state() with rank 0's buffers, identical on every rank (for a checkpoint).
  NamedTensors synced_state(Communicator& comm);
  // Throws Error naming `source` and the tensor for one missing or of another shape.
  void load(const NamedTensors& saved, const std::string& source);
  // On resume: `saved` (a checkpoint's average); without one, the average starts again from the
  // model as it now is. Returns whether there was one.
  bool restore(const NamedTensors& saved, const std::string& source);
  // Collective: rank 0's buffers (BatchNorm statistics follow each rank's batches) on every rank.
  void sync_buffers(Communicator& comm);
  // Exchanges the averaged values with the model's (call twice to undo).
  void swap_with_model();
  // Collective: `evaluate()` with the average (rank 0's buffers) in the model's place, then the
  // raw weights back.
  template <class Evaluate>
  auto evaluated_in_model(Communicator& comm, Evaluate evaluate) {
    sync_buffers(comm);
    swap_with_model();
    auto result = evaluate();
    swap_with_model();
    return result;
  }

 private:
  struct Entry {
    std::string name;
    at::Tensor model;  // the module's own tensor
    at::Tensor ema;    // fp32 (floating ones), or the same dtype (integer buffers, copied)
    bool buffer = false;
  };
  void copy_model();

  std::vector<Entry> entries_;
  std::vector<at::Tensor> ema_floats_, model_floats_;  // what the lerp moves, in entry order
  double decay_ = 0;
  bool warmup_ = false;
  int64_t every_steps_ = 1;
};

}  // namespace cvtrain
