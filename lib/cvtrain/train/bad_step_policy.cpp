// The skip rule and the stop message of train.max_bad_steps (see bad_step_policy.h).
#include "cvtrain/train/bad_step_policy.h"

#include <fmt/format.h>

namespace cvtrain {

BadStepPolicy::Verdict BadStepPolicy::judge(bool non_finite, bool loss_non_finite, bool loss_scaling) {
  if (!non_finite) {
    in_row_ = 0;
    return Verdict::kClean;
  }
  // An overflow neither resets nor extends a run of bad steps: it says nothing about the data.
  if (loss_scaling && !loss_non_finite) return Verdict::kOverflow;
  ++in_row_;
  return in_row_ >= max_in_row_ ? Verdict::kGiveUp : Verdict::kSkipped;
}

std::string BadStepPolicy::give_up_message(int64_t step, const std::string& last_checkpoint) const {
  return fmt::format(
      "{} steps in a row had non-finite loss or gradients (train.max_bad_steps {}), the last at step {}; "
      "the weights were not updated by them. {}. Lower optim.lr, set train.grad_clip, or check the data.",
      in_row_, max_in_row_, step,
      last_checkpoint.empty() ? std::string("No checkpoint was saved yet") : "Last good checkpoint: " + last_checkpoint);
}

}  // namespace cvtrain
