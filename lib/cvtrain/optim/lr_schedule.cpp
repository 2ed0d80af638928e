// LR schedule formulas; scripts/reference_train.py mirrors them for the side-by-side benchmark.
#include "cvtrain/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace cvtrain {

LrSchedule::LrSchedule(const ScheduleSpec& spec, double base_lr, int64_t steps_per_epoch, int64_t total_steps)
    : spec_(spec),
      base_lr_(base_lr),
      steps_per_epoch_(steps_per_epoch),
      total_steps_(total_steps),
      warmup_steps_(std::llround(spec.warmup_epochs * static_cast<double>(steps_per_epoch))) {}

double LrSchedule::at(int64_t step) const {
  // Warmup reaches base_lr on its last step, never starting at exactly zero.
  if (step < warmup_steps_) return base_lr_ * static_cast<double>(step + 1) / static_cast<double>(warmup_steps_);
  if (spec_.name == ScheduleKind::kCosine) {
    const double t = static_cast<double>(step - warmup_steps_) / static_cast<double>(std::max<int64_t>(1, total_steps_ - warmup_steps_));
    return spec_.min_lr + (base_lr_ - spec_.min_lr) * 0.5 * (1.0 + std::cos(M_PI * std::min(1.0, t)));
  }
  if (spec_.name == ScheduleKind::kStep) {
    int passed = 0;
    for (double milestone : spec_.milestones)
      if (step >= std::llround(milestone * static_cast<double>(steps_per_epoch_))) ++passed;
    return base_lr_ * std::pow(spec_.gamma, passed);
  }
  return base_lr_;
}

}  // namespace cvtrain
