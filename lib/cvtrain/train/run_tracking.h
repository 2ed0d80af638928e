// Experiment tracking around one start of training: in rank 0's process, where track.mlflow.uri or
// MLFLOW_TRACKING_URI names a server, an MLflow run follows the run folder (track/run_tracker.h)
// and ends as the start did: FINISHED, KILLED for a stop on request (preemption), FAILED with the
// error's first line. Training never waits for the server; the start's end waits a bounded time.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cvtrain/track/run_tracker.h"
#include "cvtrain/train/trainer.h"

namespace cvtrain {

struct Recipe;
struct RankInfo;

// Runs `train` (one start), tracked where the recipe or the environment asks for it.
TrainSummary with_tracking(const Recipe& recipe, const RankInfo& rank, const std::function<TrainSummary()>& train);

// The run folder's description for MLflow: the resolved recipe as params, cvtrain's tags.
TrackedRun tracked_run(const Recipe& recipe, const std::string& folder, bool live);

// The files a tracked run uploads at its end, those present (the report page written first).
std::vector<std::string> artifacts_to_upload(const std::string& folder, bool weights);

}  // namespace cvtrain
