// Learning rate per optimizer step: linear warmup, then cosine decay, step decay or constant.
#pragma once

#include <cstdint>

#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

class LrSchedule {
 public:
  // Epoch quantities (warmup_epochs, milestones) become steps through steps_per_epoch.
  LrSchedule(const ScheduleSpec& spec, double base_lr, int64_t steps_per_epoch, int64_t total_steps);
  double at(int64_t step) const;
  int64_t warmup_steps() const { return warmup_steps_; }

 private:
  ScheduleSpec spec_;
  double base_lr_;
  int64_t steps_per_epoch_;
  int64_t total_steps_;
  int64_t warmup_steps_;
};

}  // namespace cvtrain
