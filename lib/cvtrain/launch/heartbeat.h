// Progress reports from a rank to the supervisor that started it, through a pipe the supervisor
// passes in CVTRAIN_PROGRESS_FD. Without a supervisor (torchrun, Slurm) they do nothing. Lets the
// supervisor tell a hung rank from a slow one, and the rank stuck outside a collective from the
// ranks waiting inside it.
#pragma once

#include <cstdint>
#include <string>

#include "cvtrain/core/step_phase.h"

namespace cvtrain {

// Non-blocking and cheap (one 8-byte write each); safe to call every step.
void report_step_started(int64_t step);  // `step` is 1-based: the step now being worked on
void report_step_done(int64_t step);
// Step `step` now enters `phase` (data, forward, comm...): the hang watch names where a rank stopped.
void report_phase(int64_t step, Phase phase);

// The progress values reports encode, in words: "after step 4", "inside step 5, in forward".
// Values grow with progress: 16 x step once it is done, 16 x (step - 1) + 1 when it starts and
// 16 x (step - 1) + 2 + phase inside it.
std::string describe_progress(int64_t value);

}  // namespace cvtrain
