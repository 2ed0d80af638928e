// Where a step is, marked in one place: the breakdown's clocks (StepTimer), the phase the hang
// watch reports (launch/heartbeat.h), an NVTX range per phase inside one per step on CUDA (for
// Nsight Systems) and, inside a trace window, the profiler's range of each phase.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <memory>

#include "cvtrain/observe/step_phases.h"
#include "cvtrain/train/step_timer.h"

namespace at {
struct RecordFunction;
}

namespace cvtrain {

class PhaseMarks {
 public:
  PhaseMarks(const c10::Device& device, bool breakdown);
  ~PhaseMarks();

  // Step `step` begins in the data phase; `traced`: inside a profile window.
  void begin_step(int64_t step, bool traced);
  // Phase `ended` is over and `next` begins (nothing while silenced).
  void enter(Phase ended, Phase next);
  // The step ends in the optimizer phase; its ranges close.
  void end_step();

  // While one lives, nothing is marked: a graph's capture must not record the host's marks, and
  // a replay's inside is not timed.
  class Silence {
   public:
    explicit Silence(PhaseMarks& marks) : marks_(marks) { marks_.silent_ = true; }
    ~Silence() { marks_.silent_ = false; }
    Silence(const Silence&) = delete;
    Silence& operator=(const Silence&) = delete;

   private:
    PhaseMarks& marks_;
  };

  StepTimer& timer() { return timer_; }

 private:
  void begin_phase(Phase next);

  StepTimer timer_;
  bool nvtx_ = false, nvtx_phase_open_ = false;
  std::unique_ptr<at::RecordFunction> phase_range_;  // the current phase, while traced
  int64_t step_ = 0;
  bool traced_ = false;
  bool silent_ = false;
};

}  // namespace cvtrain
