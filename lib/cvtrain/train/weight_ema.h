// train.ema: an fp32 moving average of the model's parameters and buffers, updated after each
// optimizer step as timm's ModelEmaV3 does (decay 0 at the first update, then `decay`, or with
// warm-up 1 - (1 + step)^(-2/3) up to it; integer buffers copied), evaluated beside the raw
// weights, kept in checkpoints and exported with `cvtrain export --ema`. It averages what the
// optimizer updates: the parameters under single and ddp, this rank's flat shards under zero1,
// zero2 and fsdp, so a sharded run holds only its shard of the average; the whole average exists
// only while it is evaluated or saved. Buffers are averaged whole on every rank.
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
class Strategy;
struct EmaSpec;

class WeightEma {
 public:
  // Starts from a copy of what `strategy` trains and of `model`'s buffers, as ModelEmaV3's
  // deepcopy at creation.
  WeightEma(const EmaSpec& spec, Strategy& strategy, torch::nn::Module& model);

  // timm's get_decay(step) for the 1-based optimizer step just done.
  double decay_at(int64_t step) const;
  // After optimizer step `step`; every `every_steps` steps it moves toward the model.
  void update(int64_t step);

  // Collective: the whole average by the model's names (parameters and rank 0's buffers),
  // identical on every rank (for a checkpoint).
  NamedTensors synced_state(Communicator& comm);
  // On resume (collective): `saved` (a checkpoint's average, by name); without one, the average
  // starts again from the model as it now is. Returns whether there was one. Throws Error naming
  // `source` and the tensor for one missing or of another shape.
  bool restore(const NamedTensors& saved, const std::string& source);
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
  struct Pair {
    at::Tensor live;  // the optimizer's tensor (a parameter or a flat shard) or a model buffer
    at::Tensor ema;   // fp32 (floating ones), or the same dtype (integer buffers, copied)
  };
  // Collective: rank 0's buffers (BatchNorm statistics follow each rank's batches) on every rank.
  void sync_buffers(Communicator& comm);
  // Collective: exchanges the averaged values with the live ones and lets the strategy bring its
  // parameters up to date (call twice to undo).
  void swap_with_model();
  void copy_live();

  Strategy& strategy_;
  std::vector<Pair> trained_, buffers_;
  std::vector<at::Tensor> ema_floats_, live_floats_;  // what the lerp moves
  std::vector<std::string> buffer_names_;
  double decay_ = 0;
  bool warmup_ = false;
  int64_t every_steps_ = 1;
};

}  // namespace cvtrain
