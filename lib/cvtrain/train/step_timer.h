// The clocks of the step breakdown (observe/step_phases.h). The step marks where each phase ends;
// the time since the previous mark belongs to that phase, and the time between the previous
// step's end and this step's start (logging, checkpoints) is this step's `other`, so that a step
// is complete when it ends. On CPU these are host clocks. On CUDA they are events
// recorded on the compute stream, so that a phase is the GPU's time in it (GPU idle waiting for
// the host included); they are read once complete, a few steps later, and never synchronised.
#pragma once

#include <c10/core/Device.h>

#include <memory>
#include <vector>

#include "cvtrain/observe/step_phases.h"

namespace cvtrain {

// CUDA: of the compute phases (forward, backward, optimizer) timed, those whose end the GPU had
// already reached when the host recorded it: it had run dry, waiting for the host to issue work.
struct LaunchChecks {
  int64_t phases = 0, drained = 0;
};

class StepTimer {
 public:
  StepTimer(const c10::Device& device, bool enabled);
  ~StepTimer();
  StepTimer(StepTimer&&) noexcept;
  StepTimer& operator=(StepTimer&&) noexcept;

  // A step starts; the time since the previous step ended is its `other`.
  void begin_step();
  // The phase `phase` of the current step ended now.
  void mark(Phase phase);
  // The step ends at its last mark.
  void end_step();
  // The next step has no `other`: what lies before it (an evaluation, a new epoch's input) is
  // not between steps of one epoch.
  void break_sequence();
  // The ended steps whose times are known, oldest first, since the last call. CPU: all of them;
  // CUDA: those whose events completed.
  std::vector<PhaseSeconds> take_finished();
  // Counted since the timer was made; none on CPU.
  LaunchChecks launch_checks() const;

  struct Clocks;  // host clocks or CUDA events, defined in step_timer.cpp

 private:
  std::unique_ptr<Clocks> clocks_;
};

}  // namespace cvtrain
