// LR schedule formulas; scripts/reference_train.py mirrors cvtrain's defaults for the side-by-side
// benchmark, and tests/parity/check_schedules.py compares the timm-style settings with timm's schedulers.
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
  // timm's clock: whole epochs (step_on_epochs, its default) or optimizer updates.
  const bool epochs = spec_.step_on_epochs;
  const double spe = static_cast<double>(std::max<int64_t>(1, steps_per_epoch_));
  const double t = epochs ? std::floor(static_cast<double>(step) / spe) : static_cast<double>(step);
  const double warmup = epochs ? spec_.warmup_epochs : static_cast<double>(warmup_steps_);
  const double total = epochs ? static_cast<double>(total_steps_) / spe : static_cast<double>(total_steps_);
  if (t < warmup) {
    // timm rises from warmup_lr at t = 0; cvtrain's ramp reaches base_lr on its last step, never starting at zero.
    if (spec_.warmup_lr >= 0) return spec_.warmup_lr + t * ((base_lr_ - spec_.warmup_lr) / warmup);
    return base_lr_ * (t + 1) / warmup;
  }
  const double since = spec_.warmup_prefix ? t - warmup : t;
  const double length = spec_.warmup_prefix ? total - warmup : total;
  if (spec_.name == ScheduleKind::kCosine) {
    const double progress = since / std::max(1.0, length);
    if (progress >= 1) return spec_.min_lr;
    return spec_.min_lr + (base_lr_ - spec_.min_lr) * 0.5 * (1.0 + std::cos(M_PI * progress));
  }
  if (spec_.name == ScheduleKind::kStep) {
    // Milestones count epochs of the run, warmup included (timm's multistep with warmup_prefix off).
    int passed = 0;
    for (double milestone : spec_.milestones)
      if (t >= (epochs ? milestone : static_cast<double>(std::llround(milestone * spe)))) ++passed;
    return base_lr_ * std::pow(spec_.gamma, passed);
  }
  return base_lr_;
}

}  // namespace cvtrain
