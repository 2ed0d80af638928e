// Progress reports from a rank to the supervisor that started it, through a pipe the supervisor
// passes in CVTRAIN_PROGRESS_FD. Without a supervisor (torchrun, Slurm) they do nothing. Lets the
// supervisor tell a hung rank from a slow one, and the rank stuck outside a collective from the
// ranks waiting inside it.
#pragma once

#include <cstdint>
#include <string>

namespace cvtrain {

// Non-blocking and cheap (one 8-byte write each); safe to call every step.
void report_step_started(int64_t step);  // `step` is 1-based: the step now being worked on
void report_step_done(int64_t step);

// The progress value reports encode (2 x step when done, 2 x step - 1 while working on it), in words.
std::string describe_progress(int64_t value);

}  // namespace cvtrain
