// The single-process training loop. Losses stay on the device between log lines so a GPU is
// never synchronised per step; data wait is the time spent blocked on the loader.
#include "cvtrain/train/trainer.h"

#include <ATen/ATen.h>
#include <ATen/DeviceAccelerator.h>
#include <torch/cuda.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize.h>
#include <torch/utils.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <thread>

#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/core/rng.h"
#include "cvtrain/core/text.h"
#include "cvtrain/core/timer.h"
#include "cvtrain/data/batch_loader.h"
#include "cvtrain/data/batch_mix.h"
#include "cvtrain/data/dataset.h"
#include "cvtrain/data/device_feeder.h"
#include "cvtrain/data/synthetic.h"
#include "cvtrain/data/sampler.h"
#include "cvtrain/dist/communicator.h"
#include "cvtrain/launch/heartbeat.h"
#include "cvtrain/launch/rank_environment.h"
#include "cvtrain/launch/stop_request.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/models/flops.h"
#include "cvtrain/models/pretrained.h"
#include "cvtrain/observe/memory.h"
#include "cvtrain/observe/metrics_log.h"
#include "cvtrain/observe/progress.h"
#include "cvtrain/optim/lr_schedule.h"
#include "cvtrain/optim/optimizer.h"
#include "cvtrain/parallel/strategy.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/train/checkpoint.h"
#include "cvtrain/train/evaluator.h"
#include "cvtrain/train/fault_injection.h"
#include "cvtrain/train/loss_scaler.h"
#include "cvtrain/train/micro_batch.h"
#include "cvtrain/train/precision.h"
#include "cvtrain/train/run_directory.h"

namespace cvtrain {
namespace {

c10::Device choose_device(const std::string& requested, const RankInfo& rank) {
  const bool cuda = torch::cuda::is_available();
  if (requested == "cuda" && !cuda) throw Error("device: cuda requested but no CUDA device is visible");
  if (requested == "cpu" || !cuda) return c10::Device(c10::kCPU);
  const int count = static_cast<int>(torch::cuda::device_count());
  if (rank.local_rank >= count)
    throw Error(fmt::format("rank {} is local rank {} but this node sees only {} CUDA device(s)", rank.rank, rank.local_rank, count));
  const auto index = static_cast<c10::DeviceIndex>(rank.local_rank);
  // LibTorch, unlike torch.cuda in Python, initialises CUDA only at the first CUDA tensor; the allocator's
  // statistics are read before that. The current device is the rank's, as torchrun scripts set it, for
  // whatever is created without naming one (NCCL communicators, library handles).
  at::globalContext().lazyInitDevice(c10::kCUDA);
  at::accelerator::setDeviceIndex(index);
  return c10::Device(c10::kCUDA, index);
}

// Ranks on one node split its cores, as torchrun does with OMP_NUM_THREADS, unless the user set it:
// two ranks each running a thread per core would fight over every core.
void share_cores(const RankInfo& rank) {
  if (rank.local_world_size <= 1 || std::getenv("OMP_NUM_THREADS")) return;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(std::max(1, cores / rank.local_world_size));
}

std::unique_ptr<Communicator> join_group(const Recipe& recipe, const RankInfo& rank, const c10::Device& device) {
  std::string backend = recipe.distributed.backend;
  if (backend == "auto") backend = device.is_cuda() ? "nccl" : "gloo";
  // Every strategy but single builds its process group, even for one rank: that is how NCCL's or
  // Gloo's all-reduce (ddp) and all-gather and reduce-scatter (zero, fsdp) get checked on a single
  // device; single never does.
  return connect(GroupSpec{rank.rank, rank.world_size, rank.master_addr, rank.master_port, backend,
                           std::chrono::seconds(recipe.distributed.timeout_s), recipe.strategy != "single", rank.agent_store,
                           rank.attempt});
}

// Convolution weights in NHWC order, matching channels_last inputs (no layout conversions per step).
void to_channels_last(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  for (auto& p : model.parameters())
    if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
}

// Opens one of the recipe's datasets; what is wrong with it is a recipe error naming the key.
std::unique_ptr<Dataset> open_recipe_dataset(const DataSpec& data, const char* key, const std::string& path, int64_t limit) {
  try {
    return open_dataset(data, path, limit);
  } catch (const RecipeError&) {
    throw;
  } catch (const Error& e) {
    throw RecipeError({fmt::format("{}: {}", key, e.what())});
  }
}

// A mean loss; NaN (null in metrics.jsonl) when no step of the span had a finite one.
double mean_or_nan(double sum, int64_t count) {
  return count > 0 ? sum / static_cast<double>(count) : std::numeric_limits<double>::quiet_NaN();
}

// Accumulates what happens between two log lines.
struct Interval {
  Stopwatch clock;
  double data_wait_s = 0;
  double comm_wait_s = 0;  // waiting for gradient all-reduce after backward
  int64_t steps = 0;
  int64_t images = 0;
  at::Tensor loss_sum;    // over the steps whose loss was finite
  int64_t loss_steps = 0;
  at::Tensor last_loss;  // the latest step's mean loss
};

// What every rank agreed on after a step's backward.
struct StepControl {
  bool non_finite = false;  // loss or gradients not finite: the update is skipped
  bool stop = false;        // a rank received SIGTERM, SIGUSR1 or SIGINT
  bool save_due = false;    // checkpoint.every_minutes elapsed
  bool loss_non_finite = false;  // the loss itself (not only the gradients) was inf or NaN
};

class Trainer {
 public:
  Trainer(const Recipe& recipe, const RankInfo& rank)
      : recipe_(recipe),
        rank_(rank),
        device_(choose_device(recipe.device, rank)),
        progress_(rank.rank == 0 && ProgressDisplay::stderr_is_terminal()) {
    memory_at_start_ = current_memory_bytes(device_);  // libraries and runtime: not training's doing
    // Data first: a wrong path or an empty class folder fails before anything is written. Then
    // rank 0 (the only writer) prepares the run folder before anyone spends time on the group.
    open_data();
    checkpointer_ = std::make_unique<Checkpointer>(recipe.output, recipe.checkpoint.keep);
    if (rank.rank == 0) {
      run_ = std::make_unique<RunDirectory>(recipe.output, recipe);
      checkpointer_->check_writable();  // an unwritable or blocked output fails now, not at the first save
      metrics_ = std::make_unique<MetricsLog>(run_->file("metrics.jsonl"));
    }
    install_stop_handlers();
    share_cores(rank);
    comm_ = join_group(recipe, rank, device_);
    torch::manual_seed(static_cast<uint64_t>(recipe.train.seed));
    configure_tf32(recipe.precision);
    // Off by default, as in PyTorch: timed choices differ from run to run, and on an H200 they made
    // ResNet-50 no faster than cuDNN's heuristics (README, GPU check). Unusual shapes may gain.
    at::globalContext().setBenchmarkCuDNN(recipe.train.cudnn_benchmark);
    model_ = build_model(recipe.model, in_channels());
    if (!recipe.model.pretrained.empty()) start_from_pretrained();
    model_->to(device_);
    feed_options_.channels_last = recipe.train.channels_last && model_->is_convolutional();
    if (feed_options_.channels_last) to_channels_last(*model_);
    flops_per_image_ = forward_flops_per_image(*model_, in_channels(), recipe.model.image_size);
    if (recipe_.train.micro_batch_auto) choose_micro_batch();
    strategy_ = make_strategy(recipe.strategy, *model_, *comm_, recipe.distributed.bucket_mb, recipe.model.sync_bn);
    optimizer_ = build_optimizer(recipe.optim, strategy_->optimizer_parameters());
    scaler_ = std::make_unique<LossScaler>(recipe.precision == "fp16", device_);
    steps_per_epoch_ = static_cast<int64_t>(train_set_->size()) / recipe.train.global_batch;
    if (steps_per_epoch_ == 0)
      throw RecipeError({fmt::format("train.global_batch: {} is more than the {} training samples", recipe.train.global_batch,
                                     train_set_->size())});
    total_steps_ = recipe.train.epochs * steps_per_epoch_;
    if (recipe.train.max_steps > 0) total_steps_ = std::min(total_steps_, recipe.train.max_steps);
    schedule_ = std::make_unique<LrSchedule>(recipe.schedule, recipe.optim.lr, steps_per_epoch_, total_steps_);
  }

  TrainSummary run() {
    if (rank_.rank == 0)
      log::info("training {} ({:.2f} GFLOPs per image forward) on {} ({} samples, {} classes) on {} x {} ({}), {} steps of {} "
                "images ({} x {} accumulation x {} ranks), precision {}",
                recipe_.model.arch, flops_per_image_ / 1e9,
                recipe_.data.format == "synthetic" ? std::string("synthetic device data") : recipe_.data.train, train_set_->size(),
                train_set_->num_classes(),
                rank_.world_size, device_.str(), comm_->backend(), total_steps_, recipe_.train.global_batch,
                recipe_.train.micro_batch, recipe_.train.accumulation, rank_.world_size, recipe_.precision);
    resume_if_asked();
    Stopwatch total;
    TrainSummary summary;
    for (int64_t epoch = position_.epoch; step_ < total_steps_; ++epoch) {
      const int64_t first_batch = epoch == position_.epoch ? position_.batches_done : 0;
      summary.train_loss = train_epoch(epoch, first_batch);
      progress_.finish_line();
      evaluate_epoch(epoch, summary);
    }
    strategy_->sync_buffers();
    save_checkpoint();
    summary.steps = step_;
    summary.seconds = total.seconds();
    strategy_->gather_parameters();
    if (rank_.rank == 0) {
      torch::save(std::static_pointer_cast<torch::nn::Module>(model_), run_->file("model.pt"));
      log::info("done: {} steps in {}; weights in {}", step_, format_duration(summary.seconds), run_->file("model.pt"));
    }
    comm_->barrier("final barrier");  // no rank leaves (and tears down the group) while another still needs it
    return summary;
  }

 private:
  void open_data() {
    const DataSpec& data = recipe_.data;
    if (data.format == "synthetic") {
      const int channels = recipe_.model.in_channels > 0 ? static_cast<int>(recipe_.model.in_channels) : 3;
      train_set_ = make_synthetic_dataset(data.max_samples > 0 ? data.max_samples : kSyntheticSamples, channels, recipe_.model.num_classes);
    } else {
      train_set_ = open_recipe_dataset(data, "data.train", data.train, data.max_samples);
    }
    train_bad_ = std::make_unique<BadSamples>("data.train", train_set_->size(), data.max_bad_fraction);
    if (!data.val.empty()) {
      val_set_ = open_recipe_dataset(data, "data.val", data.val, data.max_val_samples);
      val_bad_ = std::make_unique<BadSamples>("data.val", val_set_->size(), data.max_bad_fraction);
    }
    if (data.format != "synthetic" && data.mean.size() != static_cast<size_t>(train_set_->channels()))
      throw RecipeError({fmt::format("data.mean, data.std: {} value(s) each, but {} has {} channel(s); give one per channel{}",
                                     data.mean.size(), data.train, train_set_->channels(),
                                     train_set_->channels() == 1 ? " (Fashion-MNIST: mean: [0.286], std: [0.353])" : "")});
    if (train_set_->num_classes() > recipe_.model.num_classes)
      throw RecipeError({fmt::format("model.num_classes: {} but {} has {} classes", recipe_.model.num_classes, data.train,
                                     train_set_->num_classes())});
    loader_options_.batch_size = recipe_.train.micro_batch;
    loader_options_.workers = data.workers;
    loader_options_.prefetch = data.prefetch;
    loader_options_.pin_memory = wants_pinned_memory(device_);
    feed_options_.device = device_;
    // bf16 inputs halve the batch's device memory; autocast would cast them at the first layer anyway.
    if (recipe_.precision == "bf16" && device_.is_cuda()) feed_options_.dtype = at::kBFloat16;
    feed_options_.mean = data.mean;
    feed_options_.std = data.std;
    loader_options_.transform.image_size = recipe_.model.image_size;
    loader_options_.transform.seed = static_cast<uint64_t>(recipe_.train.seed);
  }

  // train.micro_batch: auto: each rank probes its GPU with the model as it is (before the
  // strategy's hooks), keeping room for the optimizer state to come; all take the smallest choice.
  void choose_micro_batch() {
    const int64_t per_rank = recipe_.train.global_batch / rank_.world_size;
    MicroBatchProbe probe;
    probe.device = device_;
    probe.channels = in_channels();
    probe.image_size = recipe_.model.image_size;
    probe.precision = recipe_.precision;
    probe.channels_last = feed_options_.channels_last;
    int64_t parameter_bytes = 0;
    for (const auto& p : model_->parameters()) parameter_bytes += p.numel() * 4;
    const int64_t moments = recipe_.optim.name == "adamw" ? 2 : recipe_.optim.momentum > 0 ? 1 : 0;
    probe.reserved_bytes = moments * parameter_bytes;
    int64_t chosen = find_micro_batch(*model_, per_rank, probe);
    if (rank_.world_size > 1) {
      at::Tensor all = at::zeros({rank_.world_size}, at::TensorOptions(device_).dtype(at::kDouble));
      comm_->all_gather(all, at::full({1}, static_cast<double>(chosen), all.options()), "all-gather of the chosen micro-batch");
      chosen = static_cast<int64_t>(all.min().item<double>());
    }
    recipe_.train.micro_batch = chosen;
    recipe_.train.accumulation = per_rank / chosen;
    recipe_.train.micro_batch_auto = false;
    loader_options_.batch_size = chosen;
    if (rank_.rank == 0)
      log::info("train.micro_batch: auto chose {} (the largest divisor of {} images per rank that fits with {:.0f}% of the GPU to "
                "spare); accumulation {}",
                chosen, per_rank, probe.margin * 100, recipe_.train.accumulation);
  }

  void start_from_pretrained() {
    const PretrainedReport report = load_pretrained(*model_, recipe_.model.pretrained, recipe_.model.pretrained_strict);
    if (rank_.rank != 0) return;
    log::info("weights from {}{}{}", recipe_.model.pretrained,
              report.reinitialised.empty() ? "" : "; new head for " + std::to_string(recipe_.model.num_classes) + " classes: " +
                                                     join(report.reinitialised, ", "),
              report.position_embedding_resized ? "; position embedding interpolated to the new image size" : "");
    if (!report.missing.empty()) log::warn("not in {} (left as initialised): {}", recipe_.model.pretrained, join(report.missing, ", "));
    if (!report.unexpected.empty()) log::warn("in {} but not in the model (ignored): {}", recipe_.model.pretrained, join(report.unexpected, ", "));
  }

  int64_t in_channels() const {
    const int64_t from_data = train_set_->channels();
    if (recipe_.model.in_channels != 0 && recipe_.model.in_channels != from_data)
      throw RecipeError({fmt::format("model.in_channels: {} but the data has {} channel(s) (0 takes it from the data)",
                                     recipe_.model.in_channels, from_data)});
    return from_data;
  }

  // This rank's batches of an epoch: decoded by the loader's threads, or synthetic on the device.
  struct EpochInput {
    std::unique_ptr<BatchLoader> loader;
    std::unique_ptr<BatchSource> source;  // declared after the loader it reads from, so destroyed first
  };

  EpochInput open_epoch_input(std::vector<int64_t> share, const LoaderOptions& options) const {
    EpochInput input;
    if (recipe_.data.format == "synthetic") {
      input.source = std::make_unique<SyntheticBatches>(*train_set_, std::move(share), options.batch_size, recipe_.model.image_size,
                                                        feed_options_, options.transform.seed);
    } else {
      input.loader = std::make_unique<BatchLoader>(*train_set_, std::move(share), options);
      input.source = std::make_unique<DeviceFeeder>(*input.loader, feed_options_);
    }
    return input;
  }

  // Runs one epoch (or what is left of max_steps); returns the mean training loss.
  double train_epoch(int64_t epoch, int64_t first_batch) {
    LoaderOptions options = loader_options_;
    options.drop_last = true;
    options.transform.augment = &recipe_.augment;
    options.transform.epoch = epoch;
    options.bad_samples = train_bad_.get();
    const std::vector<int64_t> order = epoch_order(options.transform.seed, epoch, train_set_->size());
    std::vector<int64_t> share = rank_share(order, recipe_.train.global_batch, rank_.world_size, rank_.rank);
    // Resuming mid-epoch: this rank's part of the global batches already done is skipped.
    share.erase(share.begin(), share.begin() + first_batch * (recipe_.train.global_batch / rank_.world_size));
    EpochInput input = open_epoch_input(std::move(share), options);
    model_->train();
    Stopwatch epoch_clock;
    epoch_wait_s_ = 0;
    at::Tensor epoch_loss = at::zeros({}, at::TensorOptions(device_).dtype(at::kDouble));
    int64_t epoch_steps = 0, epoch_loss_steps = 0;
    Interval interval{};
    interval.loss_sum = at::zeros({}, at::TensorOptions(device_).dtype(at::kDouble));
    for (int64_t s = first_batch; s < steps_per_epoch_ && step_ < total_steps_; ++s) {
      const StepControl control = optimizer_step(*input.source, epoch, interval);
      // A step skipped for overflowing fp16 gradients still had a finite loss, which belongs in the
      // means; a non-finite loss would poison every mean after it.
      if (!control.loss_non_finite) {
        epoch_loss += interval.last_loss;
        interval.loss_sum += interval.last_loss;
        ++interval.loss_steps;
        ++epoch_loss_steps;
      }
      ++epoch_steps;
      ++step_;
      position_ = TrainPosition{step_, epoch, s + 1, position_.skipped_steps};
      report_step_done(step_);  // for the supervisor's hang watch
      inject_rank_fault(rank_.rank, rank_.attempt, step_);
      const bool log_now = step_ % recipe_.train.log_every == 0 || step_ == total_steps_;
      report_progress(epoch, interval, log_now);
      save_or_stop(control);
    }
    epoch_seconds_ = epoch_clock.seconds();
    epoch_images_ = epoch_steps * recipe_.train.global_batch;
    comm_->all_reduce_sum(epoch_loss, "epoch loss all-reduce");  // the mean over ranks, like the log lines
    return mean_or_nan(epoch_loss.item<double>(), rank_.world_size * epoch_loss_steps);
  }

  // One optimizer step over `accumulation` micro-batches (its mean loss goes to interval.last_loss);
  // skipped when the loss or a gradient is not finite.
  StepControl optimizer_step(BatchSource& feeder, int64_t epoch, Interval& interval) {
    report_step_started(step_ + 1);
    const int64_t accumulation = recipe_.train.accumulation;
    optimizer_->zero_grad(/*set_to_none=*/true);
    at::Tensor step_loss = at::zeros({}, at::TensorOptions(device_).dtype(at::kDouble));
    for (int64_t micro = 0; micro < accumulation; ++micro) {
      Stopwatch wait;
      std::optional<DeviceBatch> batch = feeder.next();
      const double waited = wait.seconds();
      interval.data_wait_s += waited;
      epoch_wait_s_ += waited;
      if (!batch) throw Error("the data loader ran out of batches before the epoch's last step");
      strategy_->before_forward();
      const at::Tensor loss = forward_loss(*batch, epoch);
      const bool last = micro == accumulation - 1;
      strategy_->before_backward(last);
      scaler_->scale(loss / static_cast<double>(accumulation)).backward();
      strategy_->after_backward(last);
      step_loss += loss.detach().to(at::kDouble) / static_cast<double>(accumulation);
    }
    const std::vector<at::Tensor> updated = optimizer_tensors();
    inject_non_finite(step_ + 1, step_loss, updated);
    inject_stop_request(step_ + 1);
    const at::Tensor overflow = scaler_->unscale(updated);  // fp16: inf/NaN in the gradients
    // Whole gradients in the model's order: the norm then sums exactly as
    // clip_grad_norm_(model.parameters()) does. Shards: the strategy's own tensors.
    const at::Tensor grad_norm = clip_gradients(strategy_->gradients_sharded() ? updated : model_->parameters());
    const StepControl control = agree_on_control(step_loss, grad_norm, overflow);
    interval.steps += 1;
    interval.images += recipe_.train.global_batch;
    interval.comm_wait_s += strategy_->take_comm_wait_seconds();
    interval.last_loss = step_loss;
    if (control.non_finite) {
      skip_step(step_loss, control);
    } else {
      bad_steps_in_row_ = 0;
      set_learning_rate(*optimizer_, schedule_->at(step_));
      optimizer_->step();
      strategy_->after_step();
    }
    scaler_->update(control.non_finite);
    return control;
  }

  // What the optimizer updates: the model's parameters, or this rank's shards of them.
  std::vector<at::Tensor> optimizer_tensors() const {
    ParameterGroups groups = strategy_->optimizer_parameters();
    groups.decay.insert(groups.decay.end(), groups.no_decay.begin(), groups.no_decay.end());
    return groups.decay;
  }

  // The global gradient norm as a device tensor; with train.grad_clip the gradients are scaled
  // down to it. Computed as torch.nn.utils.clip_grad_norm_ does (the norm of the per-tensor norms),
  // and with shards as FSDP's clip_grad_norm_ does (squares of the local norm summed over ranks).
  at::Tensor clip_gradients(const std::vector<at::Tensor>& tensors) {
    torch::NoGradGuard no_grad;
    std::vector<at::Tensor> grads;
    for (const auto& t : tensors)
      if (t.grad().defined()) grads.push_back(t.grad());
    at::Tensor total = grads.empty() ? at::zeros({}, at::TensorOptions(device_).dtype(at::kFloat))
                                     : at::linalg_vector_norm(at::stack(at::_foreach_norm(grads, 2)).to(at::kFloat), 2);
    if (strategy_->gradients_sharded() && rank_.world_size > 1) {
      at::Tensor squares = total.pow(2);
      comm_->all_reduce_sum(squares, "gradient norm all-reduce");
      total = squares.sqrt();
    }
    if (recipe_.train.grad_clip > 0 && !grads.empty()) {
      const at::Tensor coefficient = (recipe_.train.grad_clip / (total + 1e-6)).clamp_max(1.0);
      at::_foreach_mul_(grads, coefficient);
    }
    return total;
  }

  // One small all-reduce per step so every rank takes the same decisions: skip a non-finite step,
  // stop on a signal any rank received, save when rank 0's clock says a checkpoint is due. Reading
  // it synchronises the device once per step, as a loss scaler's inf check does.
  StepControl agree_on_control(const at::Tensor& step_loss, const at::Tensor& grad_norm, const at::Tensor& overflow) {
    const bool save_due = rank_.rank == 0 && recipe_.checkpoint.every_minutes > 0 &&
                          save_clock_.seconds() >= 60 * recipe_.checkpoint.every_minutes;
    const auto flag = [&](bool value) { return at::full({}, value ? 1.0f : 0.0f, grad_norm.options()); };
    at::Tensor flags = at::stack({at::logical_not(at::isfinite(step_loss.to(at::kFloat))).to(at::kFloat),
                                  (at::logical_not(at::isfinite(grad_norm)) | (overflow.sum() > 0)).to(at::kFloat),
                                  flag(stop_requested() != 0), flag(save_due)});
    if (rank_.world_size > 1) comm_->all_reduce_sum(flags, fmt::format("step {} control all-reduce", step_ + 1));
    const at::Tensor host = flags.cpu();
    const float* f = host.data_ptr<float>();
    StepControl control{f[0] > 0 || f[1] > 0, f[2] > 0, f[3] > 0};
    control.loss_non_finite = f[0] > 0;
    return control;
  }

  // With fp16, gradients that overflowed at a finite loss are the loss scaler's business: the
  // step is skipped and the scale halved, without counting towards train.max_bad_steps.
  void skip_step(const at::Tensor& step_loss, const StepControl& control) {
    optimizer_->zero_grad(/*set_to_none=*/true);
    ++position_.skipped_steps;
    if (scaler_->enabled() && !control.loss_non_finite) {
      if (rank_.rank == 0)
        log::info("step {}: fp16 gradients overflowed at loss scale {}; step skipped, scale halved ({} skipped in all)", step_ + 1,
                  scaler_->state().scale, position_.skipped_steps);
      return;
    }
    ++bad_steps_in_row_;
    const double loss = step_loss.item<double>();
    if (rank_.rank == 0)
      log::warn("step {}: non-finite loss or gradients (loss {}); the update is skipped ({} in a row, {} in all)", step_ + 1, loss,
                bad_steps_in_row_, position_.skipped_steps);
    if (bad_steps_in_row_ < recipe_.train.max_bad_steps) return;
    const std::vector<std::string> saved = checkpointer_->complete_checkpoints();
    throw Error(fmt::format("{} steps in a row had non-finite loss or gradients (train.max_bad_steps {}), the last at step {}; "
                            "the weights were not updated by them. {}. Lower optim.lr, set train.grad_clip, or check the data.",
                            bad_steps_in_row_, recipe_.train.max_bad_steps, step_ + 1,
                            saved.empty() ? std::string("No checkpoint was saved yet") : "Last good checkpoint: " + saved.back()));
  }

  // After a step: a checkpoint when one is due, and a clean stop when a signal asked for it.
  void save_or_stop(const StepControl& control) {
    const int64_t every = recipe_.checkpoint.every_steps;
    if ((every > 0 && step_ % every == 0) || control.save_due || control.stop) save_checkpoint();
    if (!control.stop) return;
    progress_.finish_line();
    throw Stopped(fmt::format("stopped on request after step {} of {}; checkpoint {} holds it, and the next start with "
                              "checkpoint.resume: auto continues from there",
                              step_, total_steps_, checkpointer_->folder_of(step_)));
  }

  // Every rank contributes its shards of the state; rank 0 writes; every rank learns whether it
  // worked, so a failed write stops all of them together instead of leaving the others waiting.
  void save_checkpoint() {
    if (position_.step == last_saved_step_) return;  // e.g. the end of training on an every_steps step
    std::string failure;
    strategy_->gather_parameters();
    const NamedTensors model_state = strategy_->model_state();
    strategy_->release_parameters();
    const NamedTensors optimizer_state = strategy_->optimizer_state(*optimizer_);
    if (rank_.rank == 0) {
      try {
        const LossScalerState scaler = scaler_->state();
        position_.loss_scale = scaler_->enabled() ? scaler.scale : 0;
        position_.scale_growth_tracker = scaler.growth_tracker;
        const std::string folder = checkpointer_->save(position_, model_state, optimizer_state, recipe_);
        log::info("checkpoint: {}", folder);
      } catch (const Error& e) {
        failure = e.what();
      }
    }
    at::Tensor failed = at::full({1}, failure.empty() ? 0.0f : 1.0f, at::TensorOptions(device_).dtype(at::kFloat));
    if (rank_.world_size > 1) comm_->all_reduce_sum(failed, "checkpoint status all-reduce");
    if (failed.item<float>() > 0) throw Error(failure.empty() ? "rank 0 could not write a checkpoint (see its log)" : failure);
    last_saved_step_ = position_.step;
    save_clock_.reset();
  }

  // checkpoint.resume: none starts fresh; auto takes the newest complete checkpoint of this run
  // folder (rank 0 chooses, so every rank loads the same one); PATH takes that folder.
  void resume_if_asked() {
    const std::string& resume = recipe_.checkpoint.resume;
    if (resume == "none") return;
    std::string folder = resume;
    if (resume == "auto") {
      at::Tensor chosen = at::full({1}, -1.0, at::TensorOptions(device_).dtype(at::kDouble));
      if (rank_.rank == 0)
        if (const auto latest = checkpointer_->latest()) chosen.fill_(static_cast<double>(read_position(*latest).step));
      if (rank_.world_size > 1) comm_->broadcast(chosen, 0, "broadcast of the checkpoint to resume from");
      const auto step = static_cast<int64_t>(chosen.item<double>());
      if (step < 0) return;
      folder = checkpointer_->folder_of(step);
    }
    const CheckpointContents saved = load_checkpoint(folder);
    strategy_->load_model_state(saved.model, saved.model_file);
    strategy_->load_optimizer_state(*optimizer_, saved.optimizer);
    position_ = saved.position;
    if (scaler_->enabled() && position_.loss_scale > 0)
      scaler_ = std::make_unique<LossScaler>(true, device_, LossScalerState{position_.loss_scale, position_.scale_growth_tracker});
    step_ = last_saved_step_ = position_.step;
    if (rank_.rank != 0) return;
    if (step_ >= total_steps_)
      log::info("{} is the end of this run (step {} of {}): nothing left to train. checkpoint.resume=none trains again "
                "from scratch; a larger train.epochs or train.max_steps continues.",
                folder, step_, total_steps_);
    else
      log::info("resuming from {}: step {} of {} (epoch {}, {} of its {} batches done)", folder, step_, total_steps_,
                position_.epoch + 1, position_.batches_done, steps_per_epoch_);
  }

  // Cross-entropy of one micro-batch; with Mixup/CutMix the targets are soft (smoothing folded in).
  at::Tensor forward_loss(const DeviceBatch& batch, int64_t epoch) {
    namespace F = torch::nn::functional;
    const AugmentSpec& augment = recipe_.augment;
    at::Tensor images = batch.images, targets = batch.labels;
    if (mixing_enabled(augment)) {
      constexpr uint64_t kMixStream = 0x6d69786d6978ULL;  // keeps mixing draws apart from per-sample ones
      const uint64_t key = sample_key(static_cast<uint64_t>(recipe_.train.seed) ^ kMixStream, static_cast<uint64_t>(epoch),
                                      static_cast<uint64_t>(batch.first_sample));
      MixedBatch mixed = mix_batch(images, batch.labels, recipe_.model.num_classes, augment, key);
      images = mixed.images;
      targets = mixed.targets;
    }
    at::Tensor logits;
    {
      AutocastScope autocast(recipe_.precision, device_.type());
      logits = model_->forward(images);
    }
    if (targets.dtype() != at::kLong) return F::cross_entropy(logits.to(at::kFloat), targets);
    return F::cross_entropy(logits.to(at::kFloat), targets, F::CrossEntropyFuncOptions().label_smoothing(augment.label_smoothing));
  }

  // Says once per epoch when the step waited on the input pipeline for a large part of its time.
  void warn_if_input_bound(double data_wait, int64_t epoch) {
    constexpr double kInputBound = 0.2;
    if (rank_.rank != 0 || data_wait < kInputBound || warned_input_bound_epoch_ == epoch) return;
    warned_input_bound_epoch_ = epoch;
    log::warn("input-bound: {:.0f}% of step time waiting for data. Raise data.workers (now {}; this node has {} cores), "
              "pack the data to shards pre-resized near model.image_size (`cvtrain data pack --resize`), or measure the "
              "pipeline alone with `cvtrain data bench`.",
              100 * data_wait, recipe_.data.workers, std::thread::hardware_concurrency());
  }

  void report_progress(int64_t epoch, Interval& interval, bool log_now) {
    const double elapsed = interval.clock.seconds();
    ProgressState state;
    state.step = step_;
    state.total_steps = total_steps_;
    state.epoch = epoch + 1;
    state.epochs = (total_steps_ + steps_per_epoch_ - 1) / steps_per_epoch_;
    state.lr = schedule_->at(step_ - 1);
    state.images_per_s = static_cast<double>(interval.images) / std::max(elapsed, 1e-9);
    state.data_wait = interval.data_wait_s / std::max(elapsed, 1e-9);
    state.eta_s = elapsed / static_cast<double>(interval.steps) * static_cast<double>(total_steps_ - step_);
    if (!log_now && !progress_display_due()) return;
    // Log lines carry the mean over all ranks; every rank reaches them at the same steps.
    if (log_now) {
      comm_->all_reduce_sum(interval.loss_sum, "loss all-reduce");
      interval.loss_sum.div_(rank_.world_size);
    }
    // Reading the loss synchronises a GPU: done only for a log line or a (throttled) redraw.
    state.loss = mean_or_nan(interval.loss_sum.item<double>(), interval.loss_steps);
    if (rank_.rank == 0) progress_.update(state, log_now);
    if (!log_now) return;
    warn_if_input_bound(state.data_wait, epoch);
    if (metrics_) {
      MetricRecord record{{"kind", std::string("train")}, {"epoch", epoch + 1}, {"step", step_}, {"loss", state.loss},
                          {"lr", state.lr}, {"images_per_s", state.images_per_s}, {"data_wait", state.data_wait},
                          {"comm_wait", interval.comm_wait_s / std::max(elapsed, 1e-9)},
                          {"step_s", elapsed / static_cast<double>(interval.steps)},
                          // forward + backward is about 3 forwards: the job's achieved rate, for MFU
                          {"train_tflops", 3 * flops_per_image_ * state.images_per_s / 1e12}};
      if (scaler_->enabled()) record.emplace_back("loss_scale", scaler_->state().scale);
      metrics_->write(record);
    }
    interval = Interval{};
    interval.loss_sum = at::zeros({}, at::TensorOptions(device_).dtype(at::kDouble));
  }

  // What each rank holds (parameters, optimizer state: rank 0's) and the peak memory of every rank
  // (collective: every rank calls it).
  void append_memory_report(MetricRecord& record, std::string& line) {
    const StateBytes held = strategy_->state_bytes(*optimizer_);
    at::Tensor peaks = at::zeros({rank_.world_size}, at::TensorOptions(device_).dtype(at::kDouble));
    peaks[rank_.rank].fill_(static_cast<double>(peak_memory_bytes(device_) - memory_at_start_) / 1e6);
    if (rank_.world_size > 1) comm_->all_reduce_sum(peaks, "memory report all-reduce");
    const at::Tensor host = peaks.cpu();
    std::vector<double> per_rank(host.data_ptr<double>(), host.data_ptr<double>() + rank_.world_size);
    const double peak = *std::max_element(per_rank.begin(), per_rank.end());
    record.insert(record.end(), {{"param_mb", static_cast<double>(held.parameters) / 1e6},
                                 {"optimizer_state_mb", static_cast<double>(held.optimizer_state) / 1e6},
                                 {"peak_memory_mb", peak},  // above what the process held before the trainer started
                                 {"peak_memory_mb_per_rank", fmt::format("{:.1f}", fmt::join(per_rank, " "))}});
    line += fmt::format(", per rank: parameters {:.1f} MB, optimizer state {:.1f} MB, peak {} {:.0f} MB above start",
                        static_cast<double>(held.parameters) / 1e6, static_cast<double>(held.optimizer_state) / 1e6,
                        device_.is_cuda() ? "allocated" : "RSS", peak);
  }

  // Redraws the live line at most five times a second, and only on a terminal.
  bool progress_display_due() {
    if (!progress_.interactive()) return false;
    if (redraw_clock_.seconds() < 0.2) return false;
    redraw_clock_.reset();
    return true;
  }

  void evaluate_epoch(int64_t epoch, TrainSummary& summary) {
    const double images_per_s = static_cast<double>(epoch_images_) / std::max(epoch_seconds_, 1e-9);
    MetricRecord record{{"kind", std::string("epoch")}, {"epoch", epoch + 1}, {"step", step_}, {"train_loss", summary.train_loss},
                        {"epoch_s", epoch_seconds_}, {"images_per_s", images_per_s},
                        {"data_wait", epoch_wait_s_ / std::max(epoch_seconds_, 1e-9)},
                        {"bad_samples", static_cast<int64_t>(train_bad_->count())},
                        {"skipped_steps", position_.skipped_steps}};
    std::string line = fmt::format("epoch {} train loss {:.4f}, {:.0f} img/s", epoch + 1, summary.train_loss, images_per_s);
    append_memory_report(record, line);
    if (val_set_) {
      strategy_->sync_buffers();
      LoaderOptions eval_loader = loader_options_;
      eval_loader.bad_samples = val_bad_.get();
      strategy_->gather_parameters();
      const EvalResult eval = evaluate(*model_, *val_set_, eval_loader, feed_options_, recipe_.precision, *comm_);
      strategy_->release_parameters();
      summary.top1 = eval.top1;
      summary.top5 = eval.top5;
      record.insert(record.end(), {{"val_loss", eval.loss}, {"top1", eval.top1}, {"top5", eval.top5}});
      line += fmt::format(", val loss {:.4f} top-1 {:.4f} top-5 {:.4f}", eval.loss, eval.top1, eval.top5);
    }
    if (rank_.rank != 0) return;
    metrics_->write(record);
    log::info("{}", line);
  }

  Recipe recipe_;  // a copy: train.micro_batch: auto is resolved into it
  RankInfo rank_;
  c10::Device device_;
  std::unique_ptr<RunDirectory> run_;   // rank 0 only
  std::unique_ptr<MetricsLog> metrics_; // rank 0 only
  ProgressDisplay progress_;
  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<Strategy> strategy_;
  std::unique_ptr<Dataset> train_set_, val_set_;
  std::unique_ptr<BadSamples> train_bad_, val_bad_;
  LoaderOptions loader_options_;
  FeedOptions feed_options_;
  int64_t warned_input_bound_epoch_ = -1;
  std::unique_ptr<Checkpointer> checkpointer_;
  TrainPosition position_;
  int64_t bad_steps_in_row_ = 0;
  double flops_per_image_ = 0;
  std::unique_ptr<LossScaler> scaler_;
  int64_t last_saved_step_ = -1;
  Stopwatch save_clock_;
  std::shared_ptr<Classifier> model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<LrSchedule> schedule_;
  int64_t steps_per_epoch_ = 0, total_steps_ = 0, step_ = 0;
  double epoch_seconds_ = 0, epoch_wait_s_ = 0;
  int64_t memory_at_start_ = 0;
  int64_t epoch_images_ = 0;
  Stopwatch redraw_clock_;
};

}  // namespace

TrainSummary train(const Recipe& recipe, const RankInfo& rank) { return Trainer(recipe, rank).run(); }

int visible_cuda_devices() { return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0; }

}  // namespace cvtrain
