// The step's phase marks (see phase_marks.h).
#include "cvtrain/train/phase_marks.h"

#include <ATen/record_function.h>

#include <array>
#include <string>

#include "cvtrain/launch/heartbeat.h"
#include "cvtrain/observe/cuda_ranges.h"

namespace cvtrain {

PhaseMarks::PhaseMarks(const c10::Device& device, bool breakdown) : timer_(device, breakdown), nvtx_(device.is_cuda()) {}

PhaseMarks::~PhaseMarks() = default;

void PhaseMarks::begin_step(int64_t step, bool traced) {
  step_ = step;
  traced_ = traced;
  timer_.begin_step();
  if (nvtx_) nvtx_push("cvtrain::step");
  begin_phase(Phase::kData);
}

void PhaseMarks::enter(Phase ended, Phase next) {
  if (silent_) return;
  timer_.mark(ended);
  begin_phase(next);
}

void PhaseMarks::end_step() {
  timer_.mark(Phase::kOptimizer);
  timer_.end_step();
  phase_range_.reset();
  if (!nvtx_) return;
  if (nvtx_phase_open_) nvtx_pop();
  nvtx_phase_open_ = false;
  nvtx_pop();  // the step's
}

void PhaseMarks::begin_phase(Phase next) {
  report_phase(step_, next);
  static const std::array<std::string, kPhaseCount> range_names = [] {
    std::array<std::string, kPhaseCount> names;
    for (size_t p = 0; p < kPhaseCount; ++p) names[p] = std::string("cvtrain::") + kPhaseNames[p];
    return names;
  }();
  if (nvtx_) {
    if (nvtx_phase_open_) nvtx_pop();
    nvtx_push(range_names[static_cast<size_t>(next)].c_str());
    nvtx_phase_open_ = true;
  }
  if (!traced_) return;
  phase_range_.reset();  // ends the previous phase's range
  phase_range_ = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
  phase_range_->before(range_names[static_cast<size_t>(next)]);
}

}  // namespace cvtrain
