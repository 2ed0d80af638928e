// The single-process training loop. Losses stay on the device between log lines so a GPU is
// never synchronised per step; data wait is the time spent blocked on the loader.
#include "cvtrain/train/trainer.h"

#include <ATen/ATen.h>
#include <torch/cuda.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize.h>
#include <torch/utils.h>

#include <fmt/format.h>

#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/core/timer.h"
#include "cvtrain/data/batch_loader.h"
#include "cvtrain/data/dataset.h"
#include "cvtrain/data/sampler.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/observe/metrics_log.h"
#include "cvtrain/observe/progress.h"
#include "cvtrain/optim/lr_schedule.h"
#include "cvtrain/optim/optimizer.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/train/evaluator.h"
#include "cvtrain/train/precision.h"
#include "cvtrain/train/run_directory.h"

namespace cvtrain {
namespace {

c10::Device choose_device(const std::string& requested) {
  const bool cuda = torch::cuda::is_available();
  if (requested == "cuda" && !cuda) throw Error("device: cuda requested but no CUDA device is visible");
  return (requested == "cuda" || (requested == "auto" && cuda)) ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
}

// Accumulates what happens between two log lines.
struct Interval {
  Stopwatch clock;
  double data_wait_s = 0;
  int64_t steps = 0;
  int64_t images = 0;
  at::Tensor loss_sum;
};

class Trainer {
 public:
  explicit Trainer(const Recipe& recipe)
      : recipe_(recipe),
        device_(choose_device(recipe.device)),
        run_(recipe.output, recipe),
        metrics_(run_.file("metrics.jsonl")),
        progress_(ProgressDisplay::stderr_is_terminal()) {
    torch::manual_seed(static_cast<uint64_t>(recipe.train.seed));
    configure_tf32(recipe.precision);
    open_data();
    model_ = build_model(recipe.model, in_channels());
    model_->to(device_);
    optimizer_ = build_optimizer(recipe.optim, *model_);
    steps_per_epoch_ = static_cast<int64_t>(train_set_->size()) / recipe.train.global_batch;
    if (steps_per_epoch_ == 0)
      throw RecipeError({fmt::format("train.global_batch: {} is more than the {} training samples", recipe.train.global_batch,
                                     train_set_->size())});
    total_steps_ = recipe.train.epochs * steps_per_epoch_;
    if (recipe.train.max_steps > 0) total_steps_ = std::min(total_steps_, recipe.train.max_steps);
    schedule_ = std::make_unique<LrSchedule>(recipe.schedule, recipe.optim.lr, steps_per_epoch_, total_steps_);
  }

  TrainSummary run() {
    log::info("training {} on {} ({} samples, {} classes) on {}, {} steps of {} images ({} x {} accumulation), precision {}",
              recipe_.model.arch, recipe_.data.train, train_set_->size(), train_set_->num_classes(), device_.str(), total_steps_,
              recipe_.train.global_batch, recipe_.train.micro_batch, recipe_.train.accumulation, recipe_.precision);
    Stopwatch total;
    TrainSummary summary;
    for (int64_t epoch = 0; step_ < total_steps_; ++epoch) {
      summary.train_loss = train_epoch(epoch);
      progress_.finish_line();
      evaluate_epoch(epoch, summary);
    }
    torch::save(std::static_pointer_cast<torch::nn::Module>(model_), run_.file("model.pt"));
    summary.steps = step_;
    summary.seconds = total.seconds();
    log::info("done: {} steps in {}; weights in {}", step_, format_duration(summary.seconds), run_.file("model.pt"));
    return summary;
  }

 private:
  void open_data() {
    const DataSpec& data = recipe_.data;
    train_set_ = open_dataset(data, data.train, data.max_samples);
    if (!data.val.empty()) val_set_ = open_dataset(data, data.val, data.max_val_samples);
    if (train_set_->num_classes() > recipe_.model.num_classes)
      throw RecipeError({fmt::format("model.num_classes: {} but {} has {} classes", recipe_.model.num_classes, data.train,
                                     train_set_->num_classes())});
    loader_options_.batch_size = recipe_.train.micro_batch;
    loader_options_.workers = data.workers;
    loader_options_.prefetch = data.prefetch;
    loader_options_.mean = data.mean;
    loader_options_.std = data.std;
    loader_options_.transform.image_size = recipe_.model.image_size;
    loader_options_.transform.seed = static_cast<uint64_t>(recipe_.train.seed);
  }

  int64_t in_channels() const {
    const int64_t from_data = train_set_->channels();
    if (recipe_.model.in_channels != 0 && recipe_.model.in_channels != from_data)
      throw RecipeError({fmt::format("model.in_channels: {} but the data has {} channel(s) (0 takes it from the data)",
                                     recipe_.model.in_channels, from_data)});
    return from_data;
  }

  // Runs one epoch (or what is left of max_steps); returns the mean training loss.
  double train_epoch(int64_t epoch) {
    LoaderOptions options = loader_options_;
    options.drop_last = true;
    options.transform.augment = &recipe_.augment;
    options.transform.epoch = epoch;
    BatchLoader loader(*train_set_, epoch_order(options.transform.seed, epoch, train_set_->size()), options);
    model_->train();
    Stopwatch epoch_clock;
    epoch_wait_s_ = 0;
    at::Tensor epoch_loss = at::zeros({}, at::TensorOptions(device_).dtype(at::kDouble));
    int64_t epoch_steps = 0;
    Interval interval{};
    interval.loss_sum = at::zeros({}, at::TensorOptions(device_).dtype(at::kDouble));
    for (int64_t s = 0; s < steps_per_epoch_ && step_ < total_steps_; ++s) {
      const at::Tensor loss = optimizer_step(loader, interval);
      epoch_loss += loss;
      interval.loss_sum += loss;
      ++epoch_steps;
      ++step_;
      const bool log_now = step_ % recipe_.train.log_every == 0 || step_ == total_steps_;
      report_progress(epoch, interval, log_now);
    }
    epoch_seconds_ = epoch_clock.seconds();
    epoch_images_ = epoch_steps * recipe_.train.global_batch;
    return epoch_loss.item<double>() / static_cast<double>(std::max<int64_t>(1, epoch_steps));
  }

  // One optimizer step over `accumulation` micro-batches; returns the step's mean loss.
  at::Tensor optimizer_step(BatchLoader& loader, Interval& interval) {
    const int64_t accumulation = recipe_.train.accumulation;
    optimizer_->zero_grad(/*set_to_none=*/true);
    at::Tensor step_loss = at::zeros({}, at::TensorOptions(device_).dtype(at::kDouble));
    for (int64_t micro = 0; micro < accumulation; ++micro) {
      Stopwatch wait;
      std::optional<Batch> batch = loader.next();
      const double waited = wait.seconds();
      interval.data_wait_s += waited;
      epoch_wait_s_ += waited;
      if (!batch) throw Error("the data loader ran out of batches before the epoch's last step");
      const at::Tensor images = batch->images.to(device_, /*non_blocking=*/true);
      const at::Tensor labels = batch->labels.to(device_, /*non_blocking=*/true);
      at::Tensor logits;
      {
        AutocastScope autocast(recipe_.precision, device_.type());
        logits = model_->forward(images);
      }
      const at::Tensor loss = torch::nn::functional::cross_entropy(
          logits.to(at::kFloat), labels,
          torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(recipe_.augment.label_smoothing));
      (loss / static_cast<double>(accumulation)).backward();
      step_loss += loss.detach().to(at::kDouble) / static_cast<double>(accumulation);
    }
    if (recipe_.train.grad_clip > 0) torch::nn::utils::clip_grad_norm_(model_->parameters(), recipe_.train.grad_clip);
    set_learning_rate(*optimizer_, schedule_->at(step_));
    optimizer_->step();
    interval.steps += 1;
    interval.images += recipe_.train.global_batch;
    return step_loss;
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
    // Reading the loss synchronises a GPU: done only for a log line or a (throttled) redraw.
    state.loss = interval.loss_sum.item<double>() / static_cast<double>(interval.steps);
    progress_.update(state, log_now);
    if (!log_now) return;
    metrics_.write({{"kind", std::string("train")}, {"epoch", epoch + 1}, {"step", step_}, {"loss", state.loss},
                    {"lr", state.lr}, {"images_per_s", state.images_per_s}, {"data_wait", state.data_wait}});
    interval = Interval{};
    interval.loss_sum = at::zeros({}, at::TensorOptions(device_).dtype(at::kDouble));
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
                        {"data_wait", epoch_wait_s_ / std::max(epoch_seconds_, 1e-9)}};
    std::string line = fmt::format("epoch {} train loss {:.4f}, {:.0f} img/s", epoch + 1, summary.train_loss, images_per_s);
    if (val_set_) {
      const EvalResult eval = evaluate(*model_, *val_set_, loader_options_, device_, recipe_.precision);
      summary.top1 = eval.top1;
      summary.top5 = eval.top5;
      record.insert(record.end(), {{"val_loss", eval.loss}, {"top1", eval.top1}, {"top5", eval.top5}});
      line += fmt::format(", val loss {:.4f} top-1 {:.4f} top-5 {:.4f}", eval.loss, eval.top1, eval.top5);
    }
    metrics_.write(record);
    log::info("{}", line);
  }

  const Recipe& recipe_;
  c10::Device device_;
  RunDirectory run_;
  MetricsLog metrics_;
  ProgressDisplay progress_;
  std::unique_ptr<Dataset> train_set_, val_set_;
  LoaderOptions loader_options_;
  std::shared_ptr<Classifier> model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<LrSchedule> schedule_;
  int64_t steps_per_epoch_ = 0, total_steps_ = 0, step_ = 0;
  double epoch_seconds_ = 0, epoch_wait_s_ = 0;
  int64_t epoch_images_ = 0;
  Stopwatch redraw_clock_;
};

}  // namespace

TrainSummary train(const Recipe& recipe) { return Trainer(recipe).run(); }

}  // namespace cvtrain
