// Where a run is tracked, decided once from the recipe's track.mlflow section and MLflow's own
// environment variables (the recipe wins; credentials come only from the environment).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "cvtrain/track/mlflow_client.h"

namespace cvtrain {

struct MlflowSpec;

struct TrackingSettings {
  std::string uri;  // http(s)://HOST:PORT, possibly with credentials from MLFLOW_TRACKING_URI: never shown or written
  std::string experiment;
  std::string run_name;
  Tags tags;  // the recipe's track.mlflow.tags
  bool log_weights = false;
  MlflowCredentials credentials;
  std::string parent_run_id;  // a sweep's trial: the sweep's run (kParentRunVariable)
};

// The variable a sweep sets for its trials: the MLflow run they are children of.
inline constexpr const char* kParentRunVariable = "CVTRAIN_MLFLOW_PARENT_RUN_ID";

using EnvironmentLookup = std::function<std::optional<std::string>(const std::string&)>;
std::optional<std::string> from_process_environment(const std::string& name);

// nullopt: no tracking (no address in the recipe or MLFLOW_TRACKING_URI, or `off`). An address
// from the environment cvtrain cannot speak to (file:, databricks) is warned about and ignored:
// a variable meant for other tools never stops training. `output`: the run folder, whose name is
// the default run name.
std::optional<TrackingSettings> tracking_settings(const MlflowSpec& spec, const std::string& output,
                                                  const EnvironmentLookup& env = from_process_environment);

}  // namespace cvtrain
