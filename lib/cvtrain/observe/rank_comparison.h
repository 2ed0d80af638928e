// Ranks against each other, once per logging window: each rank's mean step phases, gathered in
// one small collective by the trainer, become per-phase min / median / max over ranks, each
// rank's straggler score, and the slowest rank with the phase that makes it slow. Across
// windows, StragglerWatch tells a chronic straggler from a one-off stall. Torch-free.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cvtrain/observe/step_phases.h"

namespace cvtrain {

// One rank's window: mean seconds per step in each phase.
using RankWindow = PhaseSeconds;

// A rank's own time: the phases it spends working or waiting on its own input. Time in
// communication and between steps (logging, checkpoints) is excluded, because in synchronous
// training the fast ranks spend exactly there the time they wait for the slow one.
double own_seconds(const RankWindow& window);

struct PhaseSpread {
  double min = 0, median = 0, max = 0;
};

struct RankComparison {
  std::array<PhaseSpread, kPhaseCount> phases;  // seconds per step, over ranks
  PhaseSpread own;                              // own seconds per step, over ranks
  std::vector<double> scores;                   // per rank: the fastest own time / this rank's (1 = fastest)
  int slowest = 0;                              // the rank with the most own time
  Phase slow_phase = Phase::kForward;           // where the slowest rank spends most above the median rank
};

RankComparison compare_ranks(const std::vector<RankWindow>& ranks);

struct StragglerFinding {
  int rank = 0;
  double score = 1;           // this window's
  Phase phase = Phase::kForward;
  int64_t windows_in_row = 0; // windows in a row this rank was a straggler, this one included
  bool chronic = false;       // windows_in_row reached the chronic count
};

class StragglerWatch {
 public:
  // A rank whose score falls below `threshold` is a straggler in that window; `chronic_windows`
  // in a row make it chronic (a single window is a stall).
  StragglerWatch(double threshold, int64_t chronic_windows);
  // This window's straggler (the slowest rank, when below the threshold), or nullopt.
  std::optional<StragglerFinding> observe(const RankComparison& window);
  // The run's worst finding so far: the longest run of windows, then the lowest score.
  const std::optional<StragglerFinding>& worst() const { return worst_; }
  int64_t windows() const { return windows_; }

 private:
  double threshold_;
  int64_t chronic_windows_;
  int64_t windows_ = 0;
  std::optional<StragglerFinding> current_, worst_;
};

// "rank 1 (host gpu-node-3, GPU 1)" or "rank 1 (host gpu-node-3)" on CPU.
std::string rank_label(int rank, const std::string& host, int local_gpu);

}  // namespace cvtrain
