// How ranks share the work: the one place that knows model, optimizer tensors and communicator
// together. single: nothing to share; ddp: bucketed all-reduce overlapped with backward; zero1:
// ddp plus optimizer state sharded; zero2: gradients reduce-scattered too; fsdp: parameters
// sharded as well, gathered per block for forward and again for backward.
#pragma once

#include <memory>
#include <string>

#include "cvtrain/models/safetensors.h"
#include "cvtrain/optim/optimizer.h"

namespace torch::nn {
class Module;
}

namespace cvtrain {

class Classifier;
class Communicator;
enum class StrategyKind;  // recipe/recipe.h

// What one rank holds of the training state, in bytes (for the memory report).
struct StateBytes {
  int64_t parameters = 0;       // model parameters (fsdp: this rank's shards; gathered blocks come and go)
  int64_t optimizer_state = 0;  // momentum / Adam moments and master shards
};

class Strategy {
 public:
  virtual ~Strategy() = default;

  // ---- one optimizer step
  // Before each micro-step's forward (fsdp: gathers the parameters outside the blocks).
  virtual void before_forward() {}
  // Before each micro-step's backward; on the last one the strategy communicates.
  virtual void before_backward(bool last_micro_step) = 0;
  // After it; on the last micro-step every optimizer tensor's .grad holds the gradient averaged
  // over ranks (this rank's part of it when gradients_sharded()).
  virtual void after_backward(bool last_micro_step) = 0;
  // After optimizer.step() (zero1/zero2: the updated shards are gathered into the parameters).
  virtual void after_step() {}

  // ---- what the optimizer updates
  // The model's parameters (single, ddp) or this rank's flat shards of them (zero1, zero2, fsdp).
  virtual ParameterGroups optimizer_parameters() = 0;
  // Whether each rank holds a disjoint part of the gradient (global norms need an all-reduce).
  virtual bool gradients_sharded() const { return false; }
  // Collective: after optimizer_parameters()' tensors were written outside a step (train.ema's
  // average swapped in), the model's parameters follow them (zero1/zero2: the shards all-gathered;
  // fsdp gathers from its shards anyway; single, ddp: they are the parameters).
  virtual void publish_optimizer_parameters() {}

  // ---- whole-model access (collective: every rank calls them together)
  // fsdp: gathers every parameter for evaluation or saving, until release_parameters().
  virtual void gather_parameters() {}
  virtual void release_parameters() {}
  // Parameters and buffers by module path, whole (as torchvision/timm name them).
  virtual NamedTensors model_state() = 0;
  // Throws Error naming `source` and the tensor for a missing tensor or a shape mismatch.
  virtual void load_model_state(const NamedTensors& saved, const std::string& source) = 0;
  // The optimizer's state per parameter name ("layer1.0.conv1.weight/exp_avg"), whole; the same
  // layout for every strategy, so checkpoints move between them.
  virtual NamedTensors optimizer_state(torch::optim::Optimizer& optimizer) = 0;
  virtual void load_optimizer_state(torch::optim::Optimizer& optimizer, const NamedTensors& saved) = 0;

  // Makes every rank's buffers (BatchNorm statistics) rank 0's, before evaluation and saving.
  virtual void sync_buffers() = 0;
  // Seconds spent waiting for gradient communication after backward ended, since the last call.
  virtual double take_comm_wait_seconds() = 0;
  virtual StateBytes state_bytes(torch::optim::Optimizer& optimizer) = 0;
};

// Broadcasts rank 0's parameters and buffers first, so every rank starts identical. With sync_bn,
// the model's BatchNorm layers compute training statistics over all ranks' batches.
std::unique_ptr<Strategy> make_strategy(StrategyKind kind, Classifier& model, Communicator& comm, double bucket_mb, bool sync_bn);

}  // namespace cvtrain
