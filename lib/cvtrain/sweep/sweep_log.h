// A sweep's trials as sweep.jsonl records them (start with the values, each early-stopping rung,
// the end with status, exit code, metric and message), appended as they happen and read back by a
// restarted sweep and by `cvtrain report SWEEP`. Torch-free.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cvtrain/sweep/trial_sampler.h"

namespace cvtrain {

// stopped: interrupted (it resumes on the next start); paused: at an early-stopping rung, waiting
// to be promoted; stopped early: not promoted, final.
enum class TrialStatus { kPending, kRunning, kDone, kFailed, kStopped, kPaused, kStoppedEarly };
const char* status_name(TrialStatus status);

struct Trial {
  int64_t index = 0;
  Assignment values;
  TrialStatus status = TrialStatus::kPending;
  int exit_code = 0;
  std::optional<double> metric;
  std::string message;
  double seconds = 0;
  bool logged_start = false;  // sweep.jsonl has its start (from this or an earlier run)
  std::vector<double> rungs;  // the metric at each early-stopping rung it completed (NaN: none reported)
  std::string launcher;       // how its last start ran: "local" or the srun line's shape
};

// "trial-0007": the trial's run folder and log file (.log) under the sweep's folder.
std::string trial_name(int64_t index);

// The trials best first: those with a metric before those without, those that went further (more
// rungs) before those stopped earlier (an early rung's metric is not the end's), then by the metric.
std::vector<const Trial*> best_first(const std::vector<Trial>& trials, bool maximize);

class SweepLog {
 public:
  explicit SweepLog(std::string path) : path_(std::move(path)) {}
  void started(const Trial& t) const;
  void ended(const Trial& t) const;
  void rung(const Trial& t, int64_t epoch) const;
  // The trials an earlier run of the sweep started, with how each ended (if it did). A last line
  // cut by a kill is left out; any other damaged line throws Error with file:line.
  std::map<int64_t, Trial> read() const;

 private:
  void append(const std::string& line) const;
  std::string path_;
};

}  // namespace cvtrain
