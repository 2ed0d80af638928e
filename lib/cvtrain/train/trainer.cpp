// The training loop: epochs of optimizer steps, with metric lines, evaluation and checkpoints in
// between. What it joins lives in files of its own: building the run (run_builder), one step
// (train_step), checkpoints and the best one (checkpoint_manager), the weight average (weight_ema),
// the memory figures (memory_report), its log lines (run_lines), the records and warnings of observe/.
#include "cvtrain/train/trainer.h"

#include <ATen/ATen.h>

#include <fmt/format.h>

#include "cvtrain/comm/communicator.h"
#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/data/device_feeder.h"
#include "cvtrain/data/sample_pipeline.h"
#include "cvtrain/launch/heartbeat.h"
#include "cvtrain/launch/rank_environment.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/observe/interval_stats.h"
#include "cvtrain/observe/metric_records.h"
#include "cvtrain/observe/progress.h"
#include "cvtrain/optim/lr_schedule.h"
#include "cvtrain/parallel/strategy.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/train/checkpoint_manager.h"
#include "cvtrain/train/epoch_input.h"
#include "cvtrain/train/evaluator.h"
#include "cvtrain/train/failure_recording.h"
#include "cvtrain/train/fault_injection.h"
#include "cvtrain/train/last_evaluation.h"
#include "cvtrain/train/loss_scaler.h"
#include "cvtrain/train/loss_sum.h"
#include "cvtrain/train/memory_report.h"
#include "cvtrain/train/run_builder.h"
#include "cvtrain/train/run_directory.h"
#include "cvtrain/train/run_lines.h"
#include "cvtrain/train/run_profiler.h"
#include "cvtrain/train/run_tracking.h"
#include "cvtrain/train/task.h"
#include "cvtrain/train/trace_window.h"
#include "cvtrain/train/train_step.h"
#include "cvtrain/train/weight_ema.h"

namespace cvtrain {
namespace {

class Trainer {
 public:
  Trainer(const Recipe& recipe, const RankInfo& rank, const BeforeStrategy& before_strategy);
  TrainSummary run();

 private:
  TrainSummary train_to_the_end();
  void resume();
  double train_epoch(int64_t epoch, int64_t first_batch);
  void report_interval(int64_t epoch, bool log_now);
  void save_or_stop(const StepOutput& out);
  void save_checkpoint();
  void save_best_checkpoint(const EpochRecord& record);
  void evaluate_epoch(int64_t epoch, TrainSummary& summary);
  EvalResult evaluate_model(const LoaderOptions& loader);
  void write_final_files(double seconds) const;

  // What runs: the recipe as written, this rank, the parts (run_.plan: what the recipe resolved to).
  Recipe recipe_;
  RankInfo rank_;
  TrainingRun run_;
  TrainStep step_;
  CheckpointManager checkpoints_;
  std::unique_ptr<WeightEma> ema_;  // train.ema; null when off
  LastEvaluation last_eval_;        // the last evaluation by class, written to RUN/eval.json at the end
  // Where it stands.
  TrainPosition position_;
  // What it reports (rank 0 writes).
  ProgressDisplay progress_;
  RunProfiler profiler_;
  TraceWindow trace_;
  IntervalStats interval_, epoch_stats_;
  LossSum interval_loss_;
  double epoch_seconds_ = 0;
};

Trainer::Trainer(const Recipe& recipe, const RankInfo& rank, const BeforeStrategy& before_strategy)
    : recipe_(recipe),
      rank_(rank),
      run_(build_run(recipe_, rank_, before_strategy)),
      step_(StepParts{*run_.model, *run_.task, *run_.strategy, *run_.optimizer, *run_.scaler, *run_.comm, run_.device,
                      [this] { return checkpoints_.minutes_elapsed(); }},
            step_settings(recipe_, run_.plan, run_.device, *run_.optimizer, rank.rank == 0)),
      checkpoints_(recipe_, *run_.comm, run_.device, *run_.schedule, run_.data.named_classes),
      progress_(rank.rank == 0 && ProgressDisplay::stderr_is_terminal()),
      profiler_(recipe_, run_.plan, run_.perf, *run_.comm, run_.device, run_.flops_per_image, *run_.data.train_timings),
      trace_(recipe_.profile, rank.rank, rank.world_size, run_.comm->backend(), recipe_.output, run_.device.is_cuda()),
      interval_loss_(run_.device) {
  if (recipe_.train.ema.decay > 0) ema_ = std::make_unique<WeightEma>(recipe_.train.ema, *run_.strategy, *run_.model);
}

// Collective; with train.ema the average goes into the checkpoint too.
void Trainer::save_checkpoint() {
  checkpoints_.save(position_, *run_.strategy, *run_.optimizer, *run_.scaler, recipe_,
                    ema_ ? ema_->synced_state(*run_.comm) : NamedTensors{});
}

// checkpoint.keep_best, after the evaluation: at an epoch's end it resumes into the next epoch.
void Trainer::save_best_checkpoint(const EpochRecord& record) {
  const TrainPosition at = position_.batches_done >= run_.steps_per_epoch ? position_.at_next_epoch() : position_;
  checkpoints_.save_best(at, record, *run_.strategy, *run_.optimizer, *run_.scaler, recipe_,
                         ema_ ? ema_->synced_state(*run_.comm) : NamedTensors{});
}

// A start that fails in its set-up, or finds the run finished, leaves the run folder as it found it
// (RunDirectory); from the first step on the folder is this start's, and a failure is recorded there.
TrainSummary Trainer::run() {
  if (rank_.rank == 0) log::info("{}", run_start_line(run_, recipe_, rank_));
  resume();
  TrainSummary summary;
  summary.steps = position_.step;
  if (position_.step >= run_.total_steps) return summary;  // finished before this start
  if (run_.folder) run_.folder->keep();
  recording_failure(recipe_.output, rank_.rank, [&] { summary = train_to_the_end(); });
  return summary;
}

TrainSummary Trainer::train_to_the_end() {
  Stopwatch total;
  TrainSummary summary;
  for (int64_t epoch = position_.epoch; position_.step < run_.total_steps; ++epoch) {
    const int64_t first_batch = epoch == position_.epoch ? position_.batches_done : 0;
    summary.train_loss = train_epoch(epoch, first_batch);
    progress_.finish_line();
    evaluate_epoch(epoch, summary);
    if (epoch + 1 != recipe_.train.stop_at_epoch || position_.step >= run_.total_steps) continue;
    position_ = position_.at_next_epoch();  // train.stop_at_epoch: evaluated, so the checkpoint below resumes at the next epoch
    break;
  }
  run_.strategy->sync_buffers();
  if (position_.batches_done >= run_.steps_per_epoch) position_ = position_.at_next_epoch();  // evaluated: a longer run goes on from the next
  save_checkpoint();
  summary.steps = position_.step;
  summary.seconds = total.seconds();
  last_eval_.report(run_, recipe_, rank_, position_.step, checkpoints_.folder_of(position_.step));
  run_.strategy->gather_parameters();
  if (rank_.rank == 0) write_final_files(summary.seconds);
  run_.comm->barrier("final barrier");  // no rank leaves (and tears down the group) while another still needs it
  return summary;
}

void Trainer::resume() {
  const std::optional<ResumedRun> resumed = checkpoints_.resume(recipe_.checkpoint.resume, *run_.strategy, *run_.optimizer);
  if (!resumed) return;
  position_ = resumed->position;
  if (ema_ && !ema_->restore(resumed->ema, resumed->folder + "/" + kEmaFile) && rank_.rank == 0)
    log::warn("{} has no weight average (train.ema was off); it starts from the resumed weights", resumed->folder);
  if (run_.scaler->enabled() && position_.loss_scale > 0)
    *run_.scaler = LossScaler(true, run_.device, LossScalerState{position_.loss_scale, position_.scale_growth_tracker});
  profiler_.starts_after(position_.step);
  if (rank_.rank != 0) return;
  run_.metrics->resumed_from(position_.step);  // the report and TensorBoard drop what an earlier start logged after it
  log::info("{}", resume_line(resumed->folder, position_, run_.total_steps, run_.steps_per_epoch));
}

// Runs one epoch (or what is left of max_steps); returns the mean training loss over all ranks.
double Trainer::train_epoch(int64_t epoch, int64_t first_batch) {
  EpochInput input = open_epoch_input(run_, recipe_, rank_, epoch, first_batch);
  run_.model->train();
  epoch_stats_.restart();
  interval_.restart();
  profiler_.start_epoch(step_.timer());
  LossSum epoch_loss(run_.device);
  interval_loss_ = LossSum(run_.device);
  for (int64_t s = first_batch; s < run_.steps_per_epoch && position_.step < run_.total_steps; ++s) {
    const int64_t step = position_.step + 1;
    report_step_started(step);  // for the supervisor's hang watch
    trace_.begin_step(step);
    const StepOutput out =
        step_.run(*input.source, StepInput{step, epoch, run_.schedule->at(step - 1), position_.skipped_steps, trace_.recording()});
    trace_.end_step(step);
    if (out.give_up) throw Error(step_.bad_steps().give_up_message(step, checkpoints_.last_complete()));
    if (ema_) ema_->update(step);
    profiler_.after_step(step_.timer());
    // A step skipped for overflowing fp16 gradients still had a finite loss, which belongs in the
    // means; a non-finite loss would poison every mean after it.
    if (!out.loss_non_finite) {
      epoch_loss.add(out.loss);
      interval_loss_.add(out.loss);
    }
    interval_.add_step(out.data_wait_s, out.comm_wait_s, recipe_.train.global_batch);
    epoch_stats_.add_step(out.data_wait_s, out.comm_wait_s, recipe_.train.global_batch);
    position_ = TrainPosition{step, epoch, s + 1, position_.skipped_steps + (out.applied ? 0 : 1)};
    report_step_done(step);
    inject_rank_fault(rank_.rank, rank_.attempt, step);
    report_interval(epoch, step % recipe_.train.log_every == 0 || step == run_.total_steps);
    save_or_stop(out);
  }
  epoch_seconds_ = epoch_stats_.seconds();
  run_.comm->all_reduce_sum(epoch_loss.sum, "epoch loss all-reduce");  // the mean over ranks, like the log lines
  return mean_or_nan(epoch_loss.sum.item<double>(), rank_.world_size * epoch_loss.steps);
}

// The live line on a terminal (throttled), and at log_every steps a metrics line with the loss
// averaged over every rank (each rank reaches it at the same step).
void Trainer::report_interval(int64_t epoch, bool log_now) {
  if (!log_now && !progress_.redraw_due()) return;
  const double elapsed = interval_.seconds();
  if (log_now) {
    run_.comm->all_reduce_sum(interval_loss_.sum, "loss all-reduce");
    interval_loss_.sum.div_(rank_.world_size);
  }
  const int64_t step = position_.step;
  TrainRecord record;
  record.epoch = epoch + 1;
  record.step = step;
  record.loss = mean_or_nan(interval_loss_.sum.item<double>(), interval_loss_.steps);  // reading it synchronises a GPU
  record.lr = run_.schedule->at(step - 1);
  record.images_per_s = interval_.images_per_s(elapsed);
  record.data_wait = interval_.data_wait(elapsed);
  const double eta_s = interval_.step_s(elapsed) * static_cast<double>(run_.total_steps - step);
  const int64_t epochs = (run_.total_steps + run_.steps_per_epoch - 1) / run_.steps_per_epoch;
  if (rank_.rank == 0)
    progress_.update(
        ProgressState{step, run_.total_steps, epoch + 1, epochs, record.loss, record.lr, record.images_per_s, record.data_wait, eta_s},
        log_now);
  if (!log_now) return;
  record.comm_wait = interval_.comm_wait(elapsed);
  record.step_s = interval_.step_s(elapsed);
  record.train_tflops = 3 * run_.flops_per_image * record.images_per_s / 1e12;  // forward + backward is about 3 forwards
  if (run_.scaler->enabled()) record.loss_scale = run_.scaler->state().scale;
  profiler_.complete(epoch, record);
  if (run_.metrics) run_.metrics->write(record.to_record());
  interval_.restart();
  interval_loss_ = LossSum(run_.device);
}

// After a step: a checkpoint when one is due, and a clean stop when a signal asked for it.
void Trainer::save_or_stop(const StepOutput& out) {
  if (checkpoints_.due(position_.step, out.save_due, out.stop)) save_checkpoint();
  if (!out.stop) return;
  progress_.finish_line();
  throw Stopped(
      fmt::format("stopped on request after step {} of {}; checkpoint {} holds it, and the next start with "
                  "checkpoint.resume: auto continues from there",
                  position_.step, run_.total_steps, checkpoints_.folder_of(position_.step)));
}

void Trainer::evaluate_epoch(int64_t epoch, TrainSummary& summary) {
  EpochRecord record;
  record.epoch = epoch + 1;
  record.step = position_.step;
  record.train_loss = summary.train_loss;
  record.epoch_s = epoch_seconds_;
  record.images_per_s = epoch_stats_.images_per_s(epoch_seconds_);
  record.data_wait = epoch_stats_.data_wait(epoch_seconds_);
  record.bad_samples = static_cast<int64_t>(run_.data.train_bad->count());
  record.skipped_steps = position_.skipped_steps;
  record.memory = gather_memory_report(run_, rank_);
  profiler_.complete(record);
  if (run_.data.val && evaluation_due(recipe_.train.eval_every, epoch, position_.step >= run_.total_steps)) {
    run_.strategy->sync_buffers();
    LoaderOptions eval_loader = run_.loader;
    eval_loader.bad_samples = run_.data.val_bad.get();
    Stopwatch clock;
    const EvalResult eval = evaluate_model(eval_loader);
    record.eval = EvalFigures{eval.loss, eval.scores, clock.seconds()};
    summary.scores = eval.scores;
    last_eval_.keep(eval, record.eval->seconds);
    if (ema_) {
      Stopwatch ema_clock;
      const EvalResult averaged = ema_->evaluated_in_model(*run_.comm, [&] { return evaluate_model(eval_loader); });
      record.eval_ema = EvalFigures{averaged.loss, averaged.scores, ema_clock.seconds()};
    }
  }
  if (rank_.rank == 0) {
    run_.metrics->write(record.to_record());
    log::info("{}", record.log_line());
    profiler_.report_epoch(record);
  }
  if (checkpoints_.beats_best(record)) save_best_checkpoint(record);
}

EvalResult Trainer::evaluate_model(const LoaderOptions& loader) {
  run_.strategy->gather_parameters();
  const EvalResult eval =
      run_.task->evaluate(*run_.model, *run_.data.val, loader, run_.feed, run_.plan.precision, *run_.comm, recipe_.model.num_classes);
  run_.strategy->release_parameters();
  return eval;
}

void Trainer::write_final_files(double seconds) const {  // rank 0: model.pt, the closing line, perf_summary.json
  save_model_file(*run_.model, run_.folder->file("model.pt"));
  log::info("done: {} steps in {}; weights in {}", position_.step, format_duration(seconds), run_.folder->file("model.pt"));
  profiler_.report_run(run_.folder->file("perf_summary.json"));
}

}  // namespace

TrainSummary train(const Recipe& recipe, const RankInfo& rank, const std::function<void(PreflightParts&)>& before_strategy) {
  return with_tracking(recipe, rank, [&] { return Trainer(recipe, rank, before_strategy).run(); });
}

}  // namespace cvtrain
