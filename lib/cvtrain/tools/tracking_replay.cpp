// Replaying run folders into MLflow: the settings from the folder's own recipe (or the command
// line), the end status from what the folder says about its last start.
#include "cvtrain/tools/tracking_replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <vector>

#include "cvtrain/core/error.h"
#include "cvtrain/core/folder_lock.h"
#include "cvtrain/core/log.h"
#include "cvtrain/observe/run_history.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/recipe/recipe_loader.h"
#include "cvtrain/sweep/sweep_report.h"
#include "cvtrain/sweep/sweep_tracking.h"
#include "cvtrain/track/run_tracker.h"
#include "cvtrain/train/run_tracking.h"

namespace fs = std::filesystem;

namespace cvtrain {
namespace {

Recipe folder_recipe(const std::string& folder) {
  const std::string path = folder + "/recipe.yaml";
  if (!fs::exists(path))
    throw Error(fmt::format("{} is no run folder (it has no recipe.yaml) and no sweep folder (no sweep.jsonl)", folder));
  LoadOptions options;
  options.check_paths = false;  // the data may have moved since; the recipe is read for its values
  options.check_machine = false;
  options.saved_by_run = true;
  return load_recipe(path, options);
}

TrackingSettings settings_for(const Recipe& recipe, const std::string& folder, const ReplayOptions& options) {
  MlflowSpec spec = recipe.track.mlflow;
  if (spec.uri == "off") spec.uri.clear();  // asked for by name now: the environment's server, if the command line gives none
  if (!options.uri.empty()) spec.uri = options.uri;
  if (!options.experiment.empty()) spec.experiment = options.experiment;
  std::optional<TrackingSettings> settings = tracking_settings(spec, folder);
  if (!settings)
    throw RecipeError(
        {fmt::format("{}: no MLflow server to send it to: give --uri http://HOST:PORT, set track.mlflow.uri in the "
                     "recipe, or MLFLOW_TRACKING_URI",
                     folder)});
  return *settings;
}

// How the folder's latest start ended: its summary written (FINISHED), a failure recorded since it
// began (FAILED, with the first), else stopped or killed on the way (KILLED).
std::pair<RunEnd, std::string> end_of(const std::string& folder) {
  if (!fs::exists(folder + "/metrics.jsonl")) return {RunEnd::kFailed, "the run never trained (no metrics.jsonl)"};
  const RunHistory history = read_run_history(folder);
  if (!history.summary.is_null()) return {RunEnd::kFinished, ""};
  const std::vector<FailureRecord> failures = failures_of_latest_start(history);
  if (!failures.empty())
    return {RunEnd::kFailed, failures.front().who + ": " + failures.front().message.substr(0, failures.front().message.find('\n'))};
  return {RunEnd::kKilled, ""};
}

bool replay_run(const std::string& folder, const ReplayOptions& options, const std::string& parent_run_id) {
  const Recipe recipe = folder_recipe(folder);
  const FolderLock lock(folder, "run");  // a run training there now has its own tracker; its folder is not final
  TrackingSettings settings = settings_for(recipe, folder, options);
  if (!parent_run_id.empty()) settings.parent_run_id = parent_run_id;
  const auto [end, error_line] = end_of(folder);
  const std::vector<std::string> artifacts = artifacts_to_upload(folder, settings.log_weights);
  RunTracker tracker(settings, tracked_run(recipe, folder, false));
  return tracker.finish(end, error_line, artifacts, options.wait_s);
}

}  // namespace

ReplayResult replay_to_mlflow(const std::string& folder, const ReplayOptions& options) {
  ReplayResult result;
  if (!is_sweep_folder(folder)) {
    result.runs = 1;
    result.delivered = replay_run(folder, options, "") ? 1 : 0;
    return result;
  }
  const FolderLock lock(folder, "sweep");
  const SweepHistory sweep = read_sweep_history(folder);
  std::vector<std::string> trials;
  for (const auto& entry : fs::directory_iterator(folder))  // trial-NNNN (a run of best_recipe.yaml there is not a trial)
    if (entry.is_directory() && entry.path().filename().string().rfind("trial-", 0) == 0 && fs::exists(entry.path() / "recipe.yaml"))
      trials.push_back(entry.path().string());
  std::sort(trials.begin(), trials.end());
  if (trials.empty()) throw Error(fmt::format("{}: a sweep without any trial folder: nothing to send", folder));
  // The parent's server and experiment: those of its first trial's recipe (every trial shares the base recipe's).
  const Recipe base = folder_recipe(trials.front());
  TrackingSettings settings = settings_for(base, folder, options);
  if (base.track.mlflow.run_name.empty())
    settings.run_name = fs::path(folder).lexically_normal().filename().string();  // as the live sweep names it
  settings.parent_run_id.clear();
  RunTracker parent(settings, tracked_sweep(sweep.space, folder, false));
  const std::string parent_id = parent.wait_for_run_id(options.wait_s);
  result.runs = 1 + static_cast<int>(trials.size());
  for (const std::string& trial : trials) result.delivered += replay_run(trial, options, parent_id) ? 1 : 0;
  result.delivered += parent.finish(RunEnd::kFinished, "", sweep_artifacts(folder), options.wait_s) ? 1 : 0;
  return result;
}

}  // namespace cvtrain
