// Runs one process per rank and watches them: output prefixed by rank, SIGINT/SIGTERM/SIGUSR1
// forwarded, and on the first failure the others stopped (SIGTERM, then SIGKILL after a grace
// period). Ranks may report their training step and phase through a pipe (see heartbeat.h); one
// that reported progress and then none for hang_timeout_s is named with where it stopped, and the
// job is killed at once. Each rank runs in its own process group, signalled as a whole and
// emptied when the rank exits; ranks die with the supervisor (PR_SET_PDEATHSIG), so no process is left behind.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace cvtrain {

struct RankProcess {
  std::vector<std::string> argv;                            // argv[0]: the program (PATH is searched)
  std::vector<std::pair<std::string, std::string>> env;     // set on top of the supervisor's environment
  std::string label;                                        // "rank 3": prefixes its output lines
};

struct SupervisorOptions {
  double grace_s = 10.0;         // SIGTERM -> SIGKILL delay when stopping the others
  double hang_timeout_s = 0.0;   // > 0: stop the job when a reporting rank makes no progress this long
  // A run folder: how the group ended goes to its failures.jsonl where the ranks could not say it
  // themselves (one killed by a signal, one the hang watch stopped). Empty: nowhere. (run_group's)
  std::string run_folder;
};

inline constexpr int kExitHang = 124;  // the job's code when the hang watch stopped it (as timeout(1))

struct JobOutcome {
  int exit_code = 0;    // 0 when every rank succeeded; else the first failure's code (128 + signal if killed)
  std::string failed;   // label of the first rank that failed
  std::string how;      // "exited with code 1", "was killed by signal 9 (Killed)", "made no progress ..."
};

// Blocks until every rank has exited. Throws Error when a process cannot be started.
JobOutcome supervise(const std::vector<RankProcess>& ranks, const SupervisorOptions& options = {});

}  // namespace cvtrain
