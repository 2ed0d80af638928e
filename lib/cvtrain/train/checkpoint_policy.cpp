// Checkpoint cadence and the best epoch (see checkpoint_policy.h).
#include "cvtrain/train/checkpoint_policy.h"

#include <algorithm>

#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

CheckpointCadence::CheckpointCadence(const CheckpointSpec& spec) : every_steps_(spec.every_steps), every_minutes_(spec.every_minutes) {}

bool CheckpointCadence::minutes_elapsed(double seconds_since_save) const {
  return every_minutes_ > 0 && seconds_since_save >= 60 * every_minutes_;
}

bool CheckpointCadence::due(int64_t step, bool minutes_elapsed_agreed, bool stop) const {
  return (every_steps_ > 0 && step % every_steps_ == 0) || minutes_elapsed_agreed || stop;
}

bool evaluation_due(int64_t eval_every, int64_t epoch, bool last) { return last || (epoch + 1) % std::max<int64_t>(1, eval_every) == 0; }

std::optional<double> BestEpoch::score(double main, std::optional<double> main_ema) const {
  switch (metric_) {
    case BestMetric::kAuto:  // resolved to the task's before (recipe/task_checks.h)
    case BestMetric::kTop1:
    case BestMetric::kMiou:
      return main;
    case BestMetric::kTop1Ema:
    case BestMetric::kMiouEma:
      return main_ema;
    case BestMetric::kNone:
      break;
  }
  return std::nullopt;
}

}  // namespace cvtrain
