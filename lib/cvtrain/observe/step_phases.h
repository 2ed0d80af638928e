// Where a step's time goes: the seconds of the seven phases (core/step_phase.h) and their sums over a logging interval or a run. Torch-free: the clocks and CUDA events that fill
// them live in train/step_timer.h.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "cvtrain/core/step_phase.h"

namespace cvtrain {

struct PhaseSeconds {
  std::array<double, kPhaseCount> seconds{};
  double& operator[](Phase p) { return seconds[static_cast<size_t>(p)]; }
  double operator[](Phase p) const { return seconds[static_cast<size_t>(p)]; }
  double total() const;
  PhaseSeconds& operator+=(const PhaseSeconds& other);
};

// The steps of one interval (or of a whole run) added up: per-step means and fractions. The
// fractions add up to 1 by construction: the phases cover a step's whole time, kOther included.
class PhaseTotals {
 public:
  void add_step(const PhaseSeconds& step);
  void restart() { *this = PhaseTotals{}; }
  int64_t steps() const { return steps_; }
  const PhaseSeconds& sum() const { return sum_; }
  double step_s() const;               // mean seconds per step, all phases
  double mean_s(Phase p) const;        // mean seconds per step in phase p
  double fraction(Phase p) const;      // of the step time; 0 before any step
  Phase largest() const;               // the phase with the most time
  // "data 3% copy 0% forward 31% backward 52% comm 6% optimizer 5% other 3%"
  std::string describe() const;

 private:
  PhaseSeconds sum_;
  int64_t steps_ = 0;
};

}  // namespace cvtrain
