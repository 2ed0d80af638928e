// What happens between two metric lines, or over an epoch: wall time, time blocked on the input
// pipeline, communication left exposed after backward, steps and images. Torch-free: the losses,
// which live on the device, are summed by the trainer.
#pragma once

#include <cstdint>

#include "cvtrain/core/timer.h"

namespace cvtrain {

class IntervalStats {
 public:
  void add_step(double data_wait_s, double comm_wait_s, int64_t images);
  void restart() { *this = IntervalStats{}; }

  double seconds() const { return clock_.seconds(); }
  int64_t steps() const { return steps_; }
  int64_t images() const { return images_; }
  // Fractions of the elapsed wall time `elapsed_s` (passed in, so that every figure of one
  // record is taken against the same instant).
  double data_wait(double elapsed_s) const { return data_wait_s_ / nonzero(elapsed_s); }
  double comm_wait(double elapsed_s) const { return comm_wait_s_ / nonzero(elapsed_s); }
  double images_per_s(double elapsed_s) const { return static_cast<double>(images_) / nonzero(elapsed_s); }
  double step_s(double elapsed_s) const { return steps_ > 0 ? elapsed_s / static_cast<double>(steps_) : 0.0; }

 private:
  static double nonzero(double s) { return s > 1e-9 ? s : 1e-9; }
  Stopwatch clock_;
  double data_wait_s_ = 0;
  double comm_wait_s_ = 0;
  int64_t steps_ = 0;
  int64_t images_ = 0;
};

}  // namespace cvtrain
