// Learning rate per optimizer step: linear warmup, then cosine decay (held at its end for the
// cool-down), step decay or constant.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

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
  int64_t cooldown_steps_;
};

// What a resume with another schedule does to the learning rate, when it jumps: "the learning rate
// goes on at 0.05 from step 16, where the saved run's schedule had 1.2e-05 ...". `climbs` when it
// more than doubles (a cosine stretched by a larger train.epochs climbs back up from its end), which
// unsettles trained weights. nullopt when the two agree within 1 %, or `saved_next_lr` is not known
// (negative: a checkpoint from before cvtrain saved it).
struct LrJump {
  std::string message;
  bool climbs = false;
};
// `checkpoint` is the folder resumed from, named in the advice.
std::optional<LrJump> lr_jump(double saved_next_lr, double lr_now, int64_t steps_done, const std::string& checkpoint);

}  // namespace cvtrain
