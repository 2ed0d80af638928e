// The recipe's track.mlflow section over MLflow's variables: address, experiment, run name, tags
// and credentials, each where MLflow's own clients look for it.
#include "cvtrain/track/tracking_settings.h"

#include <cstdlib>
#include <filesystem>

#include "cvtrain/core/log.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

std::optional<std::string> from_process_environment(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (!value || !*value) return std::nullopt;
  return std::string(value);
}

std::optional<TrackingSettings> tracking_settings(const MlflowSpec& spec, const std::string& output, const EnvironmentLookup& env) {
  if (spec.uri == "off") return std::nullopt;
  TrackingSettings settings;
  settings.uri = spec.uri.empty() ? env("MLFLOW_TRACKING_URI").value_or("") : spec.uri;
  if (settings.uri.empty()) return std::nullopt;
  if (settings.uri.rfind("http://", 0) != 0 && settings.uri.rfind("https://", 0) != 0) {
    log::warn(
        "MLFLOW_TRACKING_URI is {}, not a tracking server's http(s) address: this run is not tracked "
        "(set track.mlflow.uri, or the variable to http://HOST:PORT)",
        without_credentials(settings.uri));
    return std::nullopt;
  }
  settings.experiment = !spec.experiment.empty() ? spec.experiment : env("MLFLOW_EXPERIMENT_NAME").value_or("Default");
  settings.run_name = !spec.run_name.empty() ? spec.run_name : std::filesystem::path(output).lexically_normal().filename().string();
  if (settings.run_name.empty()) settings.run_name = std::filesystem::path(output).lexically_normal().parent_path().filename().string();
  settings.tags.assign(spec.tags.begin(), spec.tags.end());
  settings.log_weights = spec.log_weights;
  settings.credentials.token = env("MLFLOW_TRACKING_TOKEN").value_or("");
  settings.credentials.username = env("MLFLOW_TRACKING_USERNAME").value_or("");
  settings.credentials.password = env("MLFLOW_TRACKING_PASSWORD").value_or("");
  settings.credentials.insecure_tls = env("MLFLOW_TRACKING_INSECURE_TLS").value_or("") == "true";
  settings.credentials.ca_file = env("MLFLOW_TRACKING_SERVER_CERT_PATH").value_or("");
  settings.parent_run_id = env(kParentRunVariable).value_or("");
  return settings;
}

}  // namespace cvtrain
