// Graceful stop on SIGTERM, SIGUSR1 or SIGINT (preemption, Slurm's early warning, Ctrl-C): the
// handler only records the signal; the training loop notices it between steps, saves a
// checkpoint and exits. A second signal of the same kind gets the default action (terminate).
#pragma once

namespace cvtrain {

// Installs the handlers for this process (idempotent).
void install_stop_handlers();

// The signal that asked this process to stop, or 0.
int stop_requested();

// Test aid and for code that wants to stop itself.
void request_stop(int signal_number);

}  // namespace cvtrain
