// One optimizer step as one unit with an explicit input and output: the micro-batch loop (forward
// under autocast, loss with Mixup/CutMix targets, scaled backward, the strategy's communication),
// fp16 unscaling, gradient clipping, the control all-reduce every rank takes its decisions from,
// and the skip / train.max_bad_steps policy. Nothing outside it touches gradients; with
// train.cuda_graphs it hands all of it after the input to a StepGraph to capture and replay.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "cvtrain/recipe/recipe.h"
#include "cvtrain/train/bad_step_policy.h"
#include "cvtrain/train/phase_marks.h"
#include "cvtrain/train/step_graph.h"
#include "cvtrain/train/step_settings.h"
#include "cvtrain/train/step_timer.h"

namespace torch::optim {
class Optimizer;
}

namespace cvtrain {

class BatchSource;
class Classifier;
class Communicator;
class DeviceGradScaling;
class LossScaler;
class Strategy;
class Task;
struct DeviceBatch;

struct StepInput {
  int64_t step = 0;   // 1-based number of the step being made
  int64_t epoch = 0;  // 0-based; keys the Mixup/CutMix draws
  double lr = 0;
  int64_t skipped_before = 0;  // steps skipped so far in the run, for the log line
  bool traced = false;         // inside a profile window: each phase becomes a profiler range
};

struct StepOutput {
  at::Tensor loss;               // mean loss of the micro-batches: a device scalar (double), read only to log
  bool applied = false;          // the optimizer updated the weights
  bool loss_non_finite = false;  // the loss itself was inf/NaN (an fp16 overflow of gradients is not)
  bool give_up = false;          // train.max_bad_steps bad steps in a row: the run must stop
  bool stop = false;             // some rank received SIGTERM, SIGUSR1 or SIGINT (agreed)
  bool save_due = false;         // rank 0's clock says a timed checkpoint is due (agreed)
  double data_wait_s = 0;        // blocked on the input pipeline
  double comm_wait_s = 0;        // waiting for gradient communication after backward
};

// What a step works on: built once per run (train/run_builder.h), outlived by the step.
struct StepParts {
  Classifier& model;
  const Task& task;  // the loss of the model's outputs against the targets
  Strategy& strategy;
  torch::optim::Optimizer& optimizer;
  LossScaler& scaler;
  Communicator& comm;
  c10::Device device;
  // Rank 0: whether checkpoint.every_minutes has elapsed. Asked at the control all-reduce, after
  // backward, so that the clock includes the step's own work.
  std::function<bool()> save_due_by_clock = [] { return false; };
};

class TrainStep {
 public:
  TrainStep(StepParts parts, StepSettings settings);
  ~TrainStep();
  StepOutput run(BatchSource& batches, const StepInput& input);
  const BadStepPolicy& bad_steps() const { return bad_steps_; }
  // The phases of finished steps (observe/step_phases.h); each step's `other` is the time
  // between the step before it and its start.
  StepTimer& timer() { return marks_.timer(); }

 private:
  using MicroInputs = std::pair<at::Tensor, at::Tensor>;  // images, targets
  struct HostDecisions {
    bool stop = false, save_due = false;
  };
  StepOutput run_graphed(BatchSource& batches, const StepInput& input);
  StepGraph::Outputs graphed_body(const StepInput& input);
  at::Tensor forward_backward(const std::function<MicroInputs(int64_t)>& inputs);
  at::Tensor gradient_tail(at::Tensor& step_loss, const at::Tensor& decisions, const at::Tensor& factors, const StepInput& input);
  void stage_host_decisions(const StepInput& input);
  void replay(const StepInput& input);
  void start_step(BatchSource& batches, const StepInput& input);
  void finish_step(BatchSource& batches);
  static DeviceBatch fetch_batch(BatchSource& batches, StepOutput& out);
  MicroInputs mixed_inputs(const DeviceBatch& batch, int64_t epoch) const;
  at::Tensor loss_of(const at::Tensor& images, const at::Tensor& targets);
  std::vector<at::Tensor> optimizer_tensors() const;
  HostDecisions host_decisions(int64_t step) const;
  at::Tensor decision_flags(const HostDecisions& decisions) const;
  at::Tensor eager_factors(int64_t step) const;
  at::Tensor control_flags(const at::Tensor& step_loss, const at::Tensor& grad_norm, const at::Tensor& overflow,
                           const at::Tensor& decisions, const StepInput& input);
  static at::Tensor read_control(const at::Tensor& flags, StepOutput& out);
  void update_decided_on_host(const at::Tensor& flags, const StepInput& input, StepOutput& out);
  at::Tensor queue_update_on_device(const at::Tensor& flags);
  void settle(const at::Tensor& readout, const StepInput& input, StepOutput& out);
  void skip(const at::Tensor& step_loss, const StepInput& input, double scale, StepOutput& out);

  StepParts parts_;
  StepSettings settings_;
  BadStepPolicy bad_steps_;
  PhaseMarks marks_;  // the breakdown's clocks, the hang watch's phase, NVTX and profiler ranges
  int rank_, world_size_;
  // optim.implementation: fused takes the skip decision on the device (queue_update_on_device).
  DeviceGradScaling* device_decides_ = nullptr;
  // train.cuda_graphs: the capture and its static tensors; null when eager.
  std::unique_ptr<StepGraph> graph_;
  bool inject_factors_ = false;  // a test asked for non-finite steps: the step multiplies by factors
};

}  // namespace cvtrain
