// One optimizer step (see train_step.h). Losses stay on the device; the one read per step is the
// control flags, as a loss scaler's inf check would read them anyway.
#include "cvtrain/train/train_step.h"

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/optimizer.h>
#include <torch/utils.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cvtrain/comm/communicator.h"
#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/core/timer.h"
#include "cvtrain/data/batch_mix.h"
#include "cvtrain/data/device_feeder.h"
#include "cvtrain/launch/stop_request.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/optim/optimizer.h"
#include "cvtrain/parallel/strategy.h"
#include "cvtrain/train/fault_injection.h"
#include "cvtrain/train/gradient_clipping.h"
#include "cvtrain/train/loss_scaler.h"
#include "cvtrain/train/precision.h"
#include "cvtrain/train/step_graph.h"
#include "cvtrain/train/task.h"

namespace cvtrain {

TrainStep::~TrainStep() = default;

TrainStep::TrainStep(StepParts parts, StepSettings settings)
    : parts_(parts),
      settings_(std::move(settings)),
      bad_steps_(settings_.max_bad_steps),
      marks_(parts.device, settings_.breakdown),
      rank_(parts.comm.rank()),
      world_size_(parts.comm.world_size()),
      device_decides_(dynamic_cast<DeviceGradScaling*>(&parts.optimizer)),
      inject_factors_(non_finite_injection_configured()) {
  if (!settings_.cuda_graphs) return;
  if (!device_decides_) throw Error("a captured step needs an optimizer that decides skipped steps on the device");
  graph_ = std::make_unique<StepGraph>(parts.device, settings_.accumulation);
}

// Eager: each micro-batch fetched and mixed, then the body every step shares, then the update
// the optimizer decides on the host (foreach) or on the device (fused).
StepOutput TrainStep::run(BatchSource& batches, const StepInput& input) {
  if (graph_) return run_graphed(batches, input);
  StepOutput out;
  start_step(batches, input);
  at::Tensor step_loss = forward_backward([&](int64_t) { return mixed_inputs(fetch_batch(batches, out), input.epoch); });
  const HostDecisions decisions = host_decisions(input.step);
  const at::Tensor flags = gradient_tail(step_loss, decision_flags(decisions), eager_factors(input.step), input);
  out.comm_wait_s = parts_.strategy.take_comm_wait_seconds();
  out.loss = step_loss;
  if (device_decides_) {
    set_learning_rate(parts_.optimizer, input.lr);
    settle(queue_update_on_device(flags), input, out);
  } else {
    update_decided_on_host(flags, input, out);
  }
  finish_step(batches);
  return out;
}

// train.cuda_graphs: the micro-batches are fetched first and staged (mixed) into the graph's
// inputs with the host's decisions, then the whole rest of the step is one replay. The breakdown
// sees data, copy, and the replay as forward: a graph's inside is not timed.
StepOutput TrainStep::run_graphed(BatchSource& batches, const StepInput& input) {
  StepOutput out;
  start_step(batches, input);
  for (int64_t micro = 0; micro < settings_.accumulation; ++micro) {
    const auto [images, targets] = mixed_inputs(fetch_batch(batches, out), input.epoch);
    if (!graph_->stage_batch(micro, images, targets))
      throw Error(fmt::format("step {}: a batch of shape {} does not fit the captured step's inputs ({}); training batches are all full",
                              input.step, fmt::join(images.sizes(), "x"), fmt::join(graph_->images(micro).sizes(), "x")));
  }
  stage_host_decisions(input);
  marks_.enter(Phase::kCopy, Phase::kForward);
  replay(input);
  marks_.enter(Phase::kForward, Phase::kOptimizer);
  out.loss = graph_->outputs().loss.clone();  // the next replay overwrites the static one
  out.comm_wait_s = parts_.strategy.take_comm_wait_seconds();
  settle(graph_->outputs().readout, input, out);
  finish_step(batches);
  return out;
}

// What a graph holds: the body every step shares, from the static inputs through the update,
// reading the host's decisions, the learning rate and the test aids' factors from staged tensors.
StepGraph::Outputs TrainStep::graphed_body(const StepInput& input) {
  at::Tensor step_loss = forward_backward([&](int64_t micro) { return std::pair{graph_->images(micro), graph_->targets(micro)}; });
  const at::Tensor flags = gradient_tail(step_loss, graph_->host_flags(), inject_factors_ ? graph_->factors() : at::Tensor(), input);
  return StepGraph::Outputs{step_loss, queue_update_on_device(flags)};
}

// The micro-batches: gradients zeroed, then each one's forward and backward with the strategy's
// communication around them. Returns the step's mean loss, on the device.
at::Tensor TrainStep::forward_backward(const std::function<MicroInputs(int64_t)>& inputs) {
  Strategy& strategy = parts_.strategy;
  const int64_t accumulation = settings_.accumulation;
  parts_.optimizer.zero_grad(/*set_to_none=*/true);
  at::Tensor step_loss = at::zeros({}, at::TensorOptions(parts_.device).dtype(at::kDouble));
  for (int64_t micro = 0; micro < accumulation; ++micro) {
    const auto [images, targets] = inputs(micro);
    const bool last = micro == accumulation - 1;
    marks_.enter(Phase::kCopy, Phase::kComm);
    strategy.before_forward();  // fsdp: the all-gather of parameters
    marks_.enter(Phase::kComm, Phase::kForward);
    const at::Tensor loss = loss_of(images, targets);
    marks_.enter(Phase::kForward, Phase::kBackward);
    strategy.before_backward(last);
    parts_.scaler.scale(loss / static_cast<double>(accumulation)).backward();
    marks_.enter(Phase::kBackward, Phase::kComm);
    strategy.after_backward(last);  // waits for the gradient communication backward did not hide
    marks_.enter(Phase::kComm, last ? Phase::kOptimizer : Phase::kData);
    step_loss += loss.detach().to(at::kDouble) / static_cast<double>(accumulation);
  }
  return step_loss;
}

// After the last backward, the same in both paths: the test aids' non-finite factors (undefined:
// none), fp16 unscaling, the global norm and clipping, and the control all-reduce of `decisions`.
// Returns the agreed flags.
at::Tensor TrainStep::gradient_tail(at::Tensor& step_loss, const at::Tensor& decisions, const at::Tensor& factors, const StepInput& input) {
  const std::vector<at::Tensor> updated = optimizer_tensors();
  if (factors.defined()) {
    step_loss = step_loss * factors[0].to(at::kDouble);
    at::_foreach_mul_(gradients_of(updated), factors[1]);
  }
  const at::Tensor overflow = parts_.scaler.unscale(updated);  // fp16: inf/NaN in the gradients
  // Whole gradients in the model's order: the norm then sums exactly as
  // clip_grad_norm_(model.parameters()) does. Shards: the strategy's own tensors.
  const bool sharded = parts_.strategy.gradients_sharded();
  const at::Tensor grad_norm = clip_gradient_norm(sharded ? updated : parts_.model.parameters(), settings_.grad_clip, parts_.device,
                                                  sharded && world_size_ > 1 ? &parts_.comm : nullptr);
  marks_.enter(Phase::kOptimizer, Phase::kComm);
  const at::Tensor flags = control_flags(step_loss, grad_norm, overflow, decisions, input);
  marks_.enter(Phase::kComm, Phase::kOptimizer);
  return flags;
}

// What a replay reads from the host, written into the graph's tensors beforehand: the learning
// rate, the host's decisions, and the test aids' non-finite factors.
void TrainStep::stage_host_decisions(const StepInput& input) {
  set_learning_rate(parts_.optimizer, input.lr);  // staged into the tensor the captured kernel reads
  const HostDecisions decisions = host_decisions(input.step);
  graph_->stage_flags(decisions.stop, decisions.save_due);
  if (!inject_factors_) return;
  const NonFiniteFactors factors = non_finite_factors(input.step);
  graph_->stage_factors(factors.loss, factors.gradients);
}

// Runs the graphed body (eager warm-up, capture, or replay), saying once when it was captured or
// why it could not be.
void TrainStep::replay(const StepInput& input) {
  const bool captured_before = graph_->captured();
  {
    const PhaseMarks::Silence silence(marks_);
    graph_->run([&] { return graphed_body(input); });
  }
  if (const std::optional<std::string> failure = graph_->take_capture_failure())
    log::warn("train.cuda_graphs: rank {} runs eager from step {} on: {}", rank_, input.step, *failure);
  if (!captured_before && graph_->captured() && rank_ == 0) log::info("train.cuda_graphs: step {} captured; the steps after replay it", input.step);
}

// The step's marks open in the data phase, ended by each batch's arrival.
void TrainStep::start_step(BatchSource& batches, const StepInput& input) {
  marks_.begin_step(input.step, input.traced);
  batches.on_arrival([this] { marks_.enter(Phase::kData, Phase::kCopy); });
}

void TrainStep::finish_step(BatchSource& batches) {
  marks_.end_step();
  batches.on_arrival(nullptr);  // the hook refers to this step's marks
}

// The next micro-batch, its wait counted as data wait.
DeviceBatch TrainStep::fetch_batch(BatchSource& batches, StepOutput& out) {
  Stopwatch wait;
  std::optional<DeviceBatch> batch = batches.next();
  out.data_wait_s += wait.seconds();
  if (!batch) throw Error("the data loader ran out of batches before the epoch's last step");
  return std::move(*batch);
}

// A micro-batch's images and targets; with Mixup/CutMix mixed, the targets soft (smoothing folded
// in). Its randomness is the host's, keyed by (seed, epoch, sample): outside any captured region.
std::pair<at::Tensor, at::Tensor> TrainStep::mixed_inputs(const DeviceBatch& batch, int64_t epoch) const {
  const AugmentSpec& augment = settings_.augment;
  if (!mixing_enabled(augment)) return {batch.images, batch.targets};
  MixedBatch mixed =
      mix_batch(batch.images, batch.targets, settings_.num_classes, augment, mix_key(settings_.seed, epoch, batch.first_sample));
  return {mixed.images, mixed.targets};
}

// The loss of one micro-batch, by the run's task (train/task.h).
at::Tensor TrainStep::loss_of(const at::Tensor& images, const at::Tensor& targets) {
  std::vector<at::Tensor> outputs;
  {
    AutocastScope autocast(settings_.precision, parts_.device.type());
    outputs = parts_.model.forward_outputs(images);
  }
  return parts_.task.loss(outputs, targets);
}

// What the optimizer updates: the model's parameters, or this rank's shards of them.
std::vector<at::Tensor> TrainStep::optimizer_tensors() const {
  ParameterGroups groups = parts_.strategy.optimizer_parameters();
  groups.decay.insert(groups.decay.end(), groups.no_decay.begin(), groups.no_decay.end());
  return groups.decay;
}

// [stop requested, checkpoint due] as the host sees them: a signal this rank received (or the
// test aid's), rank 0's clock. Eager steps ask after backward, so that the clock includes the
// step's own work; a graphed step asks before its replay.
TrainStep::HostDecisions TrainStep::host_decisions(int64_t step) const {
  inject_stop_request(step);
  return HostDecisions{stop_requested() != 0, rank_ == 0 && parts_.save_due_by_clock()};
}

at::Tensor TrainStep::decision_flags(const HostDecisions& decisions) const {
  const auto flag = [&](bool value) { return at::full({1}, value ? 1.0f : 0.0f, at::TensorOptions(parts_.device).dtype(at::kFloat)); };
  return at::cat({flag(decisions.stop), flag(decisions.save_due)});
}

// The test aids' non-finite factors of an eager step (undefined when none are asked for, which
// an eager step asks anew each time: one getenv).
at::Tensor TrainStep::eager_factors(int64_t step) const {
  if (!non_finite_injection_configured()) return at::Tensor();
  const NonFiniteFactors f = non_finite_factors(step);
  return at::tensor({f.loss, f.gradients}, at::TensorOptions(parts_.device).dtype(at::kFloat));
}

// One small all-reduce per step so every rank takes the same decisions: skip a non-finite step,
// stop on a signal any rank received, save when rank 0's clock says a checkpoint is due. Returns
// the summed flags on the device: [loss non-finite, gradients non-finite, stop, save due].
at::Tensor TrainStep::control_flags(const at::Tensor& step_loss, const at::Tensor& grad_norm, const at::Tensor& overflow,
                                    const at::Tensor& decisions, const StepInput& input) {
  at::Tensor flags = at::cat({at::stack({at::logical_not(at::isfinite(step_loss.to(at::kFloat))).to(at::kFloat),
                                         (at::logical_not(at::isfinite(grad_norm)) | (overflow.sum() > 0)).to(at::kFloat)}),
                              decisions});
  if (world_size_ > 1) parts_.comm.all_reduce_sum(flags, fmt::format("step {} control all-reduce", input.step));
  return flags;
}

// Reading the flags (and whatever the caller appended to them) is the step's one synchronisation
// with the device.
at::Tensor TrainStep::read_control(const at::Tensor& flags, StepOutput& out) {
  at::Tensor host = flags.cpu();
  const float* f = host.data_ptr<float>();
  out.loss_non_finite = f[0] > 0;
  out.applied = !(f[0] > 0 || f[1] > 0);
  out.stop = f[2] > 0;
  out.save_due = f[3] > 0;
  return host;
}

// The multi-tensor optimizers: the host reads the flags, then updates or skips.
void TrainStep::update_decided_on_host(const at::Tensor& flags, const StepInput& input, StepOutput& out) {
  read_control(flags, out);
  const bool non_finite = !out.applied;
  if (non_finite) {
    skip(out.loss, input, parts_.scaler.enabled() ? parts_.scaler.state().scale : 0, out);
  } else {
    bad_steps_.judge(false, false, parts_.scaler.enabled());
    set_learning_rate(parts_.optimizer, input.lr);
    parts_.optimizer.step();
    marks_.enter(Phase::kOptimizer, Phase::kComm);
    parts_.strategy.after_step();  // zero1/zero2/fsdp: updated shards all-gathered
    marks_.enter(Phase::kComm, Phase::kOptimizer);
  }
  if (!out.give_up) parts_.scaler.update(non_finite);
}

// The fused optimizers: the skip is a device flag the kernel reads (a skipped step leaves weights,
// moments and step counts as they were) and the loss scale follows the same flag. Nothing in here
// waits for the device, which is what lets a CUDA graph hold the update. Returns the flags with the
// loss scale the step used appended (a log line names it), for settle() to read.
at::Tensor TrainStep::queue_update_on_device(const at::Tensor& flags) {
  const at::Tensor skipped = (flags.narrow(0, 0, 2).sum() > 0).to(at::kFloat).reshape({1});
  device_decides_->scale_next_step(at::Tensor(), skipped);
  parts_.optimizer.step();
  marks_.enter(Phase::kOptimizer, Phase::kComm);
  parts_.strategy.after_step();  // a skipped step gathers the unchanged shards
  marks_.enter(Phase::kComm, Phase::kOptimizer);
  const at::Tensor readout = parts_.scaler.enabled() ? at::cat({flags, parts_.scaler.scale_tensor().to(at::kFloat)}) : flags;
  parts_.scaler.update(skipped);
  return readout;
}

// After the update is queued: the host reads what the device decided, and counts and logs a skip.
void TrainStep::settle(const at::Tensor& readout, const StepInput& input, StepOutput& out) {
  const at::Tensor host = read_control(readout, out);
  if (out.applied)
    bad_steps_.judge(false, false, parts_.scaler.enabled());
  else
    skip(out.loss, input, parts_.scaler.enabled() ? host.data_ptr<float>()[4] : 0, out);
}

// `scale`: the fp16 loss scale the step used.
void TrainStep::skip(const at::Tensor& step_loss, const StepInput& input, double scale, StepOutput& out) {
  parts_.optimizer.zero_grad(/*set_to_none=*/true);
  const int64_t skipped = input.skipped_before + 1;
  switch (bad_steps_.judge(true, out.loss_non_finite, parts_.scaler.enabled())) {
    case BadStepPolicy::Verdict::kOverflow:
      if (rank_ == 0)
        log::info("step {}: fp16 gradients overflowed at loss scale {}; step skipped, scale halved ({} skipped in all)", input.step, scale,
                  skipped);
      return;
    case BadStepPolicy::Verdict::kGiveUp:
      out.give_up = true;
      [[fallthrough]];
    default: {
      const double loss = step_loss.item<double>();
      if (rank_ == 0)
        log::warn("step {}: non-finite loss or gradients (loss {}); the update is skipped ({} in a row, {} in all)", input.step, loss,
                  bad_steps_.in_row(), skipped);
    }
  }
}

}  // namespace cvtrain
