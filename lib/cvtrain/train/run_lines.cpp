// The run's opening line and its resume line (train/run_lines.h).
#include "cvtrain/train/run_lines.h"

#include <fmt/format.h>

#include "cvtrain/comm/communicator.h"
#include "cvtrain/data/dataset.h"
#include "cvtrain/launch/rank_environment.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/train/checkpoint.h"
#include "cvtrain/train/run_builder.h"

namespace cvtrain {

std::string run_start_line(const TrainingRun& run, const Recipe& recipe, const RankInfo& rank) {
  const BatchPlan& b = run.plan.batch;
  const std::string data = recipe.data.format == DataFormat::kSynthetic ? std::string("synthetic device data") : recipe.data.train;
  return fmt::format(
      "training {} ({:.2f} GFLOPs per image forward) on {} ({} samples, {} classes) on {} x {} ({}), {} steps of {} "
      "images ({} x {} accumulation x {} ranks), precision {}, strategy {}",
      recipe.model.arch, run.flops_per_image / 1e9, data, run.data.train->size(), run.data.train->num_classes(), rank.world_size,
      run.device.str(), run.comm->backend(), run.total_steps, b.global, b.micro, b.accumulation, rank.world_size, run.plan.precision.name(),
      name_of(run.plan.strategy));
}

std::string resume_line(const std::string& folder, const TrainPosition& position, int64_t total_steps, int64_t steps_per_epoch) {
  if (position.step >= total_steps)
    return fmt::format(
        "{} is the end of this run (step {} of {}): nothing left to train. checkpoint.resume=none trains again "
        "from scratch; a larger train.epochs or train.max_steps continues.",
        folder, position.step, total_steps);
  return fmt::format("resuming from {}: step {} of {} (epoch {}, {} of its {} batches done)", folder, position.step, total_steps,
                     position.epoch + 1, position.batches_done, steps_per_epoch);
}

}  // namespace cvtrain
