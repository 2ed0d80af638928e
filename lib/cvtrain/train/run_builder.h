// Building what each command runs from its recipe and plan: device, data, run folder, process
// group, model (pretrained weights, layout), micro-batch probe, strategy, optimizer, loss scaler
// and schedule, in the parts each command needs (predict, eval, preflight, training).
// Each builder takes its own section; the order keeps side effects last: every check that can
// fail on the data runs before the run folder is touched, and the folder is ready before any
// time is spent on the group.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cvtrain/data/batch_loader.h"
#include "cvtrain/data/device_feeder.h"
#include "cvtrain/observe/perf_monitor.h"
#include "cvtrain/recipe/run_plan.h"
#include "cvtrain/train/run_data.h"

namespace torch::optim {
class Optimizer;
}

namespace cvtrain {

class BadSamples;
class Classifier;
class Communicator;
class Dataset;
class JpegBatchDecoder;
class LossScaler;
class LrSchedule;
class MetricsLog;
class RunDirectory;
class Strategy;
class Task;
struct DataSpec;
struct RankInfo;
struct Recipe;
struct TrainSpec;

// What each command builds, and nothing more: `cvtrain predict` a model on a device, `cvtrain eval`
// that with data and a process group, preflight that measured, training all of it and the parts
// that update the model. Each level adds only what its command uses.
struct InferenceParts {
  RunPlan plan;  // the recipe resolved for this job: batch, precision, strategy, device, decoder, workers
  c10::Device device = c10::Device(c10::kCPU);
  int64_t channels = 0;  // what the model takes in
  LoaderOptions loader;
  FeedOptions feed;
  std::shared_ptr<Classifier> model;
};

struct EvaluationParts : InferenceParts {
  EvaluationParts();  // out of line, where Communicator is a complete type
  EvaluationParts(EvaluationParts&&) noexcept;
  ~EvaluationParts();

  RunData data;                // train and val for training and preflight; val alone for `cvtrain eval`
  std::unique_ptr<Task> task;  // the recipe's task: batches, loss, evaluation (train/task.h)
  std::unique_ptr<Communicator> comm;
};

struct PreflightParts : EvaluationParts {
  int64_t memory_at_start = 0;                     // libraries and runtime: not training's doing
  std::shared_ptr<JpegBatchDecoder> jpeg_decoder;  // data.decoder nvjpeg (or auto, where it could): the device's; null: the CPU's
  double flops_per_image = 0;                      // forward
  PerfContext perf;                                // every rank's host and GPU, the device's peak and memory
};

struct TrainingRun : PreflightParts {
  TrainingRun();
  TrainingRun(TrainingRun&&) noexcept;
  ~TrainingRun();

  std::unique_ptr<RunDirectory> folder;  // rank 0 only
  std::unique_ptr<MetricsLog> metrics;   // rank 0 only
  std::unique_ptr<Strategy> strategy;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<LossScaler> scaler;
  std::unique_ptr<LrSchedule> schedule;
  int64_t steps_per_epoch = 0;
  int64_t total_steps = 0;
};

// The training loader's and feeder's settings for `device` (the epoch sets the rest); `rank` tells
// data.workers: auto its share of the node's cores.
LoaderOptions loader_options(const DataSpec& data, const TrainSpec& train, int64_t image_size, const c10::Device& device,
                             const RankInfo& rank);
FeedOptions feed_options(const DataSpec& data, const PrecisionPolicy& precision, const c10::Device& device);

// Called once the model is on the device, before the strategy takes it over (`preflight: true`
// runs its probes there); may be empty.
using BeforeStrategy = std::function<void(PreflightParts&)>;

// Builds every part for `rank`; `run.plan` holds what the recipe's `auto`s became (the recipe stays as written).
TrainingRun build_run(const Recipe& recipe, const RankInfo& rank, const BeforeStrategy& before_strategy = {});
// For `cvtrain preflight`: device, data, process group and model, measured, without a run folder,
// optimizer or strategy.
PreflightParts build_preflight_parts(const Recipe& recipe, const RankInfo& rank);
// For `cvtrain eval`: device, validation data, process group and model (model.pretrained loaded
// when the recipe names it).
EvaluationParts build_evaluation_parts(const Recipe& recipe, const RankInfo& rank);
// For `cvtrain predict`: one process on the recipe's device (the first GPU, where `auto` finds
// one), the loader's and feeder's settings and the model for `channels`.
InferenceParts build_inference_parts(const Recipe& recipe, int64_t channels);

}  // namespace cvtrain
