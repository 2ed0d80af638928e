// One optimizer step (see train_step.h). Losses stay on the device; the one read per step is the
// control flags, as a loss scaler's inf check would read them anyway.
#include "cvtrain/train/train_step.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>
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
#include "cvtrain/launch/heartbeat.h"
#include "cvtrain/launch/stop_request.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/observe/cuda_ranges.h"
#include "cvtrain/optim/optimizer.h"
#include "cvtrain/parallel/strategy.h"
#include "cvtrain/recipe/run_plan.h"
#include "cvtrain/train/fault_injection.h"
#include "cvtrain/train/loss_scaler.h"
#include "cvtrain/train/precision.h"
#include "cvtrain/train/step_graph.h"

namespace cvtrain {
namespace {

// The gradients the tensors have (a parameter that took no part in the step has none).
std::vector<at::Tensor> gradients_of(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> grads;
  for (const at::Tensor& t : tensors)
    if (t.grad().defined()) grads.push_back(t.grad());
  return grads;
}

}  // namespace

StepSettings step_settings(const Recipe& recipe, const RunPlan& plan, const c10::Device& device, torch::optim::Optimizer& optimizer,
                           bool log_choices) {
  StepSettings s;
  s.accumulation = plan.batch.accumulation;
  s.grad_clip = recipe.train.grad_clip;
  s.precision = plan.precision;
  s.augment = recipe.augment;
  s.num_classes = recipe.model.num_classes;
  s.seed = static_cast<uint64_t>(recipe.train.seed);
  s.max_bad_steps = recipe.train.max_bad_steps;
  s.breakdown = recipe.observe.breakdown;
  s.loss = LossSettings{recipe.train.loss, recipe.augment.label_smoothing, recipe.train.bce_target_threshold};
  if (recipe.train.cuda_graphs) {
    const bool cuda = device.is_cuda() || graph_body_on_cpu_requested();
    const std::optional<std::string> refusal =
        graph_refusal(GraphConditions{cuda, dynamic_cast<DeviceGradScaling*>(&optimizer) != nullptr, plan.strategy});
    s.cuda_graphs = !refusal;
    if (log_choices && refusal) log::warn("train.cuda_graphs: running eager: {}", *refusal);
    if (log_choices && !refusal)
      log::info("train.cuda_graphs: this start's first {} steps run eagerly, the next is captured and then replayed; the breakdown "
                "counts each replay as forward", kGraphWarmupSteps);
  }
  return s;
}

TrainStep::~TrainStep() = default;

TrainStep::TrainStep(StepParts parts, StepSettings settings)
    : parts_(parts),
      settings_(std::move(settings)),
      bad_steps_(settings_.max_bad_steps),
      timer_(parts.device, settings_.breakdown),
      rank_(parts.comm.rank()),
      world_size_(parts.comm.world_size()),
      nvtx_(parts.device.is_cuda()),
      device_decides_(dynamic_cast<DeviceGradScaling*>(&parts.optimizer)),
      inject_factors_(non_finite_injection_configured()) {
  if (!settings_.cuda_graphs) return;
  if (!device_decides_) throw Error("a captured step needs an optimizer that decides skipped steps on the device");
  graph_ = std::make_unique<StepGraph>(parts.device, settings_.accumulation);
}

StepOutput TrainStep::run(BatchSource& batches, const StepInput& input) {
  if (graph_) return run_graphed(batches, input);
  StepOutput out;
  Strategy& strategy = parts_.strategy;
  const int64_t accumulation = settings_.accumulation;
  start_step(batches, input);
  parts_.optimizer.zero_grad(/*set_to_none=*/true);
  at::Tensor step_loss = at::zeros({}, at::TensorOptions(parts_.device).dtype(at::kDouble));
  for (int64_t micro = 0; micro < accumulation; ++micro) {
    const DeviceBatch batch = fetch_batch(batches, out);
    enter(Phase::kCopy, Phase::kComm, input);
    strategy.before_forward();  // fsdp: the all-gather of parameters
    enter(Phase::kComm, Phase::kForward, input);
    const auto [images, targets] = mixed_inputs(batch, input.epoch);
    const at::Tensor loss = loss_of(images, targets);
    enter(Phase::kForward, Phase::kBackward, input);
    const bool last = micro == accumulation - 1;
    strategy.before_backward(last);
    parts_.scaler.scale(loss / static_cast<double>(accumulation)).backward();
    enter(Phase::kBackward, Phase::kComm, input);
    strategy.after_backward(last);  // waits for the gradient communication backward did not hide
    enter(Phase::kComm, last ? Phase::kOptimizer : Phase::kData, input);
    step_loss += loss.detach().to(at::kDouble) / static_cast<double>(accumulation);
  }
  const std::vector<at::Tensor> updated = optimizer_tensors();
  inject_non_finite(input.step, step_loss, updated);
  const at::Tensor overflow = parts_.scaler.unscale(updated);  // fp16: inf/NaN in the gradients
  // Whole gradients in the model's order: the norm then sums exactly as
  // clip_grad_norm_(model.parameters()) does. Shards: the strategy's own tensors.
  const at::Tensor grad_norm = clip_gradients(strategy.gradients_sharded() ? updated : parts_.model.parameters());
  enter(Phase::kOptimizer, Phase::kComm, input);
  const at::Tensor flags = control_flags(step_loss, grad_norm, overflow, host_decisions(input), input);
  enter(Phase::kComm, Phase::kOptimizer, input);
  out.comm_wait_s = strategy.take_comm_wait_seconds();
  out.loss = step_loss;
  if (device_decides_) {
    set_learning_rate(parts_.optimizer, input.lr);
    settle(queue_update_on_device(flags, input), input, out);
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
    const DeviceBatch batch = fetch_batch(batches, out);
    const auto [images, targets] = mixed_inputs(batch, input.epoch);
    if (!graph_->stage_batch(micro, images, targets))
      throw Error(fmt::format("step {}: a batch of shape {} does not fit the captured step's inputs ({}); training batches are all full",
                              input.step, fmt::join(images.sizes(), "x"), fmt::join(graph_->images(micro).sizes(), "x")));
  }
  stage_host_decisions(input);
  enter(Phase::kCopy, Phase::kForward, input);
  replay(input);
  enter(Phase::kForward, Phase::kOptimizer, input);
  out.loss = graph_->outputs().loss.clone();  // the next replay overwrites the static one
  out.comm_wait_s = parts_.strategy.take_comm_wait_seconds();
  settle(graph_->outputs().readout, input, out);
  finish_step(batches);
  return out;
}

// What a replay reads from the host, written into the graph's tensors beforehand: the learning
// rate, a stop signal, rank 0's checkpoint clock, and the test aids' non-finite factors.
void TrainStep::stage_host_decisions(const StepInput& input) {
  set_learning_rate(parts_.optimizer, input.lr);  // staged into the tensor the captured kernel reads
  inject_stop_request(input.step);
  graph_->stage_flags(stop_requested() != 0, rank_ == 0 && parts_.save_due_by_clock());
  if (!inject_factors_) return;
  const NonFiniteFactors factors = non_finite_factors(input.step);
  graph_->stage_factors(factors.loss, factors.gradients);
}

// Runs the graphed body (eager warm-up, capture, or replay), saying once when it was captured or
// why it could not be.
void TrainStep::replay(const StepInput& input) {
  marks_off_ = true;  // inside the graph nothing is timed; a capture must not record the host's marks
  const bool captured_before = graph_->captured();
  try {
    graph_->run([&] { return graphed_body(input); });
  } catch (...) {
    marks_off_ = false;
    throw;
  }
  marks_off_ = false;
  if (const std::optional<std::string> failure = graph_->take_capture_failure())
    log::warn("train.cuda_graphs: rank {} runs eager from step {} on: {}", rank_, input.step, *failure);
  if (!captured_before && graph_->captured() && rank_ == 0) log::info("train.cuda_graphs: step {} captured; the steps after replay it", input.step);
}

// The step's clocks and ranges open; the data phase begins, ended by each batch's arrival.
void TrainStep::start_step(BatchSource& batches, const StepInput& input) {
  timer_.begin_step();
  if (nvtx_) nvtx_push("cvtrain::step");
  batches.on_arrival([this, &input] { enter(Phase::kData, Phase::kCopy, input); });
  begin_phase(Phase::kData, input);
}

void TrainStep::finish_step(BatchSource& batches) {
  timer_.mark(Phase::kOptimizer);
  timer_.end_step();
  phase_range_.reset();
  end_nvtx_ranges();
  batches.on_arrival(nullptr);  // the hook refers to this step's input
}

// The next micro-batch, its wait counted as data wait.
DeviceBatch TrainStep::fetch_batch(BatchSource& batches, StepOutput& out) {
  Stopwatch wait;
  std::optional<DeviceBatch> batch = batches.next();
  out.data_wait_s += wait.seconds();
  if (!batch) throw Error("the data loader ran out of batches before the epoch's last step");
  return std::move(*batch);
}

// What a graph holds: the micro-batches from the static inputs through the update, reading the
// host's decisions and the learning rate from device tensors staged before each replay.
StepGraph::Outputs TrainStep::graphed_body(const StepInput& input) {
  Strategy& strategy = parts_.strategy;
  const int64_t accumulation = settings_.accumulation;
  parts_.optimizer.zero_grad(/*set_to_none=*/true);
  at::Tensor step_loss = at::zeros({}, at::TensorOptions(parts_.device).dtype(at::kDouble));
  for (int64_t micro = 0; micro < accumulation; ++micro) {
    strategy.before_forward();
    const at::Tensor loss = loss_of(graph_->images(micro), graph_->targets(micro));
    const bool last = micro == accumulation - 1;
    strategy.before_backward(last);
    parts_.scaler.scale(loss / static_cast<double>(accumulation)).backward();
    strategy.after_backward(last);
    step_loss += loss.detach().to(at::kDouble) / static_cast<double>(accumulation);
  }
  const std::vector<at::Tensor> updated = optimizer_tensors();
  if (inject_factors_) {
    step_loss = step_loss * graph_->factors()[0].to(at::kDouble);
    at::_foreach_mul_(gradients_of(updated), graph_->factors()[1]);
  }
  const at::Tensor overflow = parts_.scaler.unscale(updated);
  const at::Tensor grad_norm = clip_gradients(strategy.gradients_sharded() ? updated : parts_.model.parameters());
  const at::Tensor flags = control_flags(step_loss, grad_norm, overflow, graph_->host_flags(), input);
  return StepGraph::Outputs{step_loss, queue_update_on_device(flags, input)};
}

// Phase `ended` is over and `next` begins: the breakdown's mark, where the hang watch would say
// this rank stopped, and in a trace window the profiler range of the phase.
void TrainStep::enter(Phase ended, Phase next, const StepInput& input) {
  if (marks_off_) return;
  timer_.mark(ended);
  begin_phase(next, input);
}

void TrainStep::begin_phase(Phase next, const StepInput& input) {
  report_phase(input.step, next);
  static const std::array<std::string, kPhaseCount> range_names = [] {
    std::array<std::string, kPhaseCount> names;
    for (size_t p = 0; p < kPhaseCount; ++p) names[p] = std::string("cvtrain::") + kPhaseNames[p];
    return names;
  }();
  if (nvtx_) {
    if (nvtx_phase_open_) nvtx_pop();
    nvtx_push(range_names[static_cast<size_t>(next)].c_str());
    nvtx_phase_open_ = true;
  }
  if (!input.traced) return;
  phase_range_.reset();  // ends the previous phase's range
  phase_range_ = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
  phase_range_->before(range_names[static_cast<size_t>(next)]);
}

// Closes the last phase's NVTX range and the step's.
void TrainStep::end_nvtx_ranges() {
  if (!nvtx_) return;
  if (nvtx_phase_open_) nvtx_pop();
  nvtx_phase_open_ = false;
  nvtx_pop();
}

// A micro-batch's images and targets; with Mixup/CutMix mixed, the targets soft (smoothing folded
// in). Its randomness is the host's, keyed by (seed, epoch, sample): outside any captured region.
std::pair<at::Tensor, at::Tensor> TrainStep::mixed_inputs(const DeviceBatch& batch, int64_t epoch) const {
  const AugmentSpec& augment = settings_.augment;
  if (!mixing_enabled(augment)) return {batch.images, batch.labels};
  MixedBatch mixed = mix_batch(batch.images, batch.labels, settings_.num_classes, augment, mix_key(settings_.seed, epoch, batch.first_sample));
  return {mixed.images, mixed.targets};
}

// The loss of one micro-batch (train.loss).
at::Tensor TrainStep::loss_of(const at::Tensor& images, const at::Tensor& targets) {
  at::Tensor logits;
  {
    AutocastScope autocast(settings_.precision, parts_.device.type());
    logits = parts_.model.forward(images);
  }
  return classification_loss(logits.to(at::kFloat), targets, settings_.loss);
}

// What the optimizer updates: the model's parameters, or this rank's shards of them.
std::vector<at::Tensor> TrainStep::optimizer_tensors() const {
  ParameterGroups groups = parts_.strategy.optimizer_parameters();
  groups.decay.insert(groups.decay.end(), groups.no_decay.begin(), groups.no_decay.end());
  return groups.decay;
}

// The global gradient norm as a device tensor; with train.grad_clip the gradients are scaled
// down to it. Computed as torch.nn.utils.clip_grad_norm_ does (the norm of the per-tensor norms),
// and with shards as FSDP's clip_grad_norm_ does (squares of the local norm summed over ranks).
at::Tensor TrainStep::clip_gradients(const std::vector<at::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  const std::vector<at::Tensor> grads = gradients_of(tensors);
  at::Tensor total = grads.empty() ? at::zeros({}, at::TensorOptions(parts_.device).dtype(at::kFloat))
                                   : at::linalg_vector_norm(at::stack(at::_foreach_norm(grads, 2)).to(at::kFloat), 2);
  if (parts_.strategy.gradients_sharded() && world_size_ > 1) {
    at::Tensor squares = total.pow(2);
    parts_.comm.all_reduce_sum(squares, "gradient norm all-reduce");
    total = squares.sqrt();
  }
  if (settings_.grad_clip > 0 && !grads.empty()) {
    const at::Tensor coefficient = (settings_.grad_clip / (total + 1e-6)).clamp_max(1.0);
    at::_foreach_mul_(grads, coefficient);
  }
  return total;
}

// [stop requested, checkpoint due] on the device: a signal this rank received, rank 0's clock.
// Asked after backward, so that the clock includes the step's own work.
at::Tensor TrainStep::host_decisions(const StepInput& input) {
  inject_stop_request(input.step);
  const auto flag = [&](bool value) { return at::full({1}, value ? 1.0f : 0.0f, at::TensorOptions(parts_.device).dtype(at::kFloat)); };
  return at::cat({flag(stop_requested() != 0), flag(rank_ == 0 && parts_.save_due_by_clock())});
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
    enter(Phase::kOptimizer, Phase::kComm, input);
    parts_.strategy.after_step();  // zero1/zero2/fsdp: updated shards all-gathered
    enter(Phase::kComm, Phase::kOptimizer, input);
  }
  if (!out.give_up) parts_.scaler.update(non_finite);
}

// The fused optimizers: the skip is a device flag the kernel reads (a skipped step leaves weights,
// moments and step counts as they were) and the loss scale follows the same flag. Nothing in here
// waits for the device, which is what lets a CUDA graph hold the update. Returns the flags with the
// loss scale the step used appended (a log line names it), for settle() to read.
at::Tensor TrainStep::queue_update_on_device(const at::Tensor& flags, const StepInput& input) {
  const at::Tensor skipped = (flags.narrow(0, 0, 2).sum() > 0).to(at::kFloat).reshape({1});
  device_decides_->scale_next_step(at::Tensor(), skipped);
  parts_.optimizer.step();
  enter(Phase::kOptimizer, Phase::kComm, input);
  parts_.strategy.after_step();  // a skipped step gathers the unchanged shards
  enter(Phase::kComm, Phase::kOptimizer, input);
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
