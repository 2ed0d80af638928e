// `cvtrain track RUN`: a run folder sent to MLflow after the fact (a run trained without tracking,
// or whose server was down) the way a live run sends it (track/run_tracker.h), and idempotently:
// the run that the folder's mlflow_run.json names is completed, never duplicated, and a point the
// server holds is not sent again. A sweep's folder goes as the parent run with a child per trial.
#pragma once

#include <string>

namespace cvtrain {

struct ReplayOptions {
  std::string uri;         // "": the recipe's track.mlflow.uri, else MLFLOW_TRACKING_URI
  std::string experiment;  // "": the recipe's, else MLFLOW_EXPERIMENT_NAME, else Default
  double wait_s = 600;     // per run, at most
};

struct ReplayResult {
  int runs = 0;       // MLflow runs the folder made up (a sweep: 1 + its trials)
  int delivered = 0;  // those the server took whole
};

// Throws RecipeError when no server is named, Error when `folder` is no run or sweep folder.
ReplayResult replay_to_mlflow(const std::string& folder, const ReplayOptions& options);

}  // namespace cvtrain
