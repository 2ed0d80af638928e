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
// Where the last report left this rank, it now blocks in `collective` (kNone: it is out of it
// again). Called by the communicator around every wait.
void report_collective(Collective collective);

// The progress values reports encode, in words: "after step 4", "inside step 5, in forward",
// "inside step 5, in comm, waiting in all-reduce". Values grow with progress: within each block
// of kProgressPerStep, 0 is "after step N" (+ the collective waited in there), 8 "step N+1
// started" (+ collective), 16 x (1 + phase) + collective inside step N+1.
inline constexpr int64_t kProgressPerStep = 128;
std::string describe_progress(int64_t value);

}  // namespace cvtrain
