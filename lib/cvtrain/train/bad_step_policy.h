// train.max_bad_steps: what a step whose loss or gradients are not finite means for the run. The
// update is skipped; so many such steps in a row stop the run. Under fp16 loss scaling, gradients
// that overflowed at a finite loss are the scaler's business (it halves the scale): skipped, but not
// counted towards the limit. Torch-free, so the policy is unit-tested without a model.
#pragma once

#include <cstdint>
#include <string>

namespace cvtrain {

class BadStepPolicy {
 public:
  enum class Verdict {
    kClean,     // the update is applied
    kOverflow,  // fp16 overflow: skipped, scale halved, not a bad step
    kSkipped,   // a bad step: skipped and counted
    kGiveUp,    // the max_bad_steps-th bad step in a row: the run must stop
  };

  explicit BadStepPolicy(int64_t max_in_row) : max_in_row_(max_in_row) {}

  // `non_finite`: the loss or a gradient was inf/NaN; `loss_non_finite`: the loss itself was.
  Verdict judge(bool non_finite, bool loss_non_finite, bool loss_scaling);
  int64_t in_row() const { return in_row_; }
  int64_t max_in_row() const { return max_in_row_; }

  // The error that stops the run at `step`; `last_checkpoint` empty when none was saved yet.
  std::string give_up_message(int64_t step, const std::string& last_checkpoint) const;

 private:
  int64_t max_in_row_;
  int64_t in_row_ = 0;
};

}  // namespace cvtrain
