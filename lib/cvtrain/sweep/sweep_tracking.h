// A sweep in MLflow: a parent run (the search space as params, the results and the sweep's report
// page as artifacts) whose id the trials get (CVTRAIN_MLFLOW_PARENT_RUN_ID), so that each trial's
// own run is its child. Nothing at all when the base recipe and the environment name no server.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cvtrain/track/run_tracker.h"

namespace cvtrain {

struct Recipe;
struct SweepSpace;

// The sweep folder's description for MLflow: the space's settings and dimensions as params.
TrackedRun tracked_sweep(const SweepSpace& space, const std::string& folder, bool live);

// What a sweep's run uploads at its end (the sweep's report page written first).
std::vector<std::string> sweep_artifacts(const std::string& folder);

class SweepTracking {
 public:
  // `base`: the recipe every trial starts from (its track.mlflow section); `folder`: the sweep's.
  SweepTracking(const Recipe& base, const SweepSpace& space, const std::string& folder);
  ~SweepTracking();
  // The parent run's id, waiting a few seconds for the server to create it; "" when tracking is off
  // or the server did not answer (the trials are then tracked as runs of their own).
  std::string parent_run_id();
  // A trial's start that ended well (at a rung or at its end) with `metric` (nullopt: it reported
  // none): a line of SWEEP/metrics.jsonl, which the parent run gets as sweep/METRIC,
  // sweep/best_METRIC and sweep/trial at the count of such ends.
  void trial_reported(int64_t trial, std::optional<double> metric);
  // `stopped`: the sweep was interrupted and continues on its next start.
  void finish(bool stopped);

 private:
  std::string folder_;
  std::string metric_;
  bool maximize_ = true;
  int64_t reports_ = 0;
  std::optional<double> best_;
  std::unique_ptr<RunTracker> tracker_;
};

}  // namespace cvtrain
