// LR schedule formulas; scripts/reference_train.py mirrors cvtrain's defaults for the side-by-side
// benchmark, and tests/parity/check_schedules.py compares the timm-style settings with timm's schedulers.
#include "cvtrain/optim/lr_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace cvtrain {

LrSchedule::LrSchedule(const ScheduleSpec& spec, double base_lr, int64_t steps_per_epoch, int64_t total_steps)
    : spec_(spec),
      base_lr_(base_lr),
      steps_per_epoch_(steps_per_epoch),
      total_steps_(total_steps),
      warmup_steps_(std::llround(spec.warmup_epochs * static_cast<double>(steps_per_epoch))),
      cooldown_steps_(std::llround(spec.cooldown_epochs * static_cast<double>(steps_per_epoch))) {}

double LrSchedule::at(int64_t step) const {
  // timm's clock: whole epochs (step_on_epochs, its default) or optimizer updates.
  const bool epochs = spec_.step_on_epochs;
  const double spe = static_cast<double>(std::max<int64_t>(1, steps_per_epoch_));
  const double t = epochs ? std::floor(static_cast<double>(step) / spe) : static_cast<double>(step);
  const double warmup = epochs ? spec_.warmup_epochs : static_cast<double>(warmup_steps_);
  const double total = epochs ? static_cast<double>(total_steps_) / spe : static_cast<double>(total_steps_);
  const double cooldown = epochs ? spec_.cooldown_epochs : static_cast<double>(cooldown_steps_);
  if (t < warmup) {
    // timm rises from warmup_lr at t = 0; cvtrain's ramp reaches base_lr on its last step, never starting at zero.
    if (spec_.warmup_lr >= 0) return spec_.warmup_lr + t * ((base_lr_ - spec_.warmup_lr) / warmup);
    return base_lr_ * (t + 1) / warmup;
  }
  const double since = spec_.warmup_prefix ? t - warmup : t;
  // The cosine ends `cooldown` before the run does (timm's cycle of --epochs, then --cooldown-epochs at its end).
  const double length = (spec_.warmup_prefix ? total - warmup : total) - cooldown;
  if (spec_.name == ScheduleKind::kCosine) {
    const double progress = since / std::max(1.0, length);
    if (progress >= 1) return spec_.min_lr;
    return spec_.min_lr + (base_lr_ - spec_.min_lr) * 0.5 * (1.0 + std::cos(M_PI * progress));
  }
  if (spec_.name == ScheduleKind::kPoly) {  // mmseg's PolyLR: (base - min) (1 - progress)^power + min
    const double progress = std::min(1.0, since / std::max(1.0, length));
    return spec_.min_lr + (base_lr_ - spec_.min_lr) * std::pow(1.0 - progress, spec_.power);
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

std::optional<LrJump> lr_jump(double saved_next_lr, double lr_now, int64_t steps_done, const std::string& checkpoint) {
  if (saved_next_lr < 0 || std::abs(lr_now - saved_next_lr) <= 0.01 * std::max(lr_now, saved_next_lr)) return std::nullopt;
  const bool climbs = lr_now > 2 * saved_next_lr;
  return LrJump{fmt::format("the learning rate goes on at {:.4g} from step {}, where the saved run's schedule had {:.4g}: this run's "
                            "train.epochs, train.max_steps, optim.lr or schedule keys reshape it{}",
                            lr_now, steps_done + 1, saved_next_lr,
                            climbs ? ". To train on at a low rate instead, start a new run (another output) from these weights with a "
                                     "schedule of its own: model.pretrained=" +
                                         checkpoint + "/model.safetensors"
                                   : ""),
                climbs};
}

}  // namespace cvtrain
