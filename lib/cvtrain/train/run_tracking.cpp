// Tracking one start: the tracker made before the trainer (it waits for the run folder), ended with
// the start's outcome; the report page written for it at the end.
#include "cvtrain/train/run_tracking.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>

#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/core/text_file.h"
#include "cvtrain/core/this_machine.h"
#include "cvtrain/core/version.h"
#include "cvtrain/git_revision.h"
#include "cvtrain/launch/rank_environment.h"
#include "cvtrain/observe/run_history.h"
#include "cvtrain/observe/run_report.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/recipe/recipe_schema.h"

namespace cvtrain {
namespace {

constexpr double kEndWaitSeconds = 60;      // what the end of a finished or failed start gives the server
constexpr double kStoppedWaitSeconds = 10;  // a stop on request: the scheduler's grace period is short

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

TrackedRun tracked_run(const Recipe& recipe, const std::string& folder, bool live) {
  TrackedRun run;
  run.folder = folder;
  run.live = live;
  // Params are the experiment's settings, which MLflow never lets change: the keys a sweep sets per
  // start (a free port, the rung to stop at) are not, and differ between one run's starts.
  for (auto& [key, value] : recipe_values(recipe))
    if (key != "distributed.master_port" && key != "train.stop_at_epoch") run.params.emplace_back(key, std::move(value));
  const char* user = std::getenv("USER");
  run.tags = {{"mlflow.source.name", "cvtrain"}, {"mlflow.source.type", "LOCAL"}, {"mlflow.source.git.commit", CVTRAIN_GIT_REVISION},
              {"mlflow.user", user ? user : ""}, {"cvtrain.version", kVersion},   {"cvtrain.host", host_name()},
              {"cvtrain.output", folder}};
  return run;
}

std::vector<std::string> artifacts_to_upload(const std::string& folder, bool weights) {
  if (!std::filesystem::exists(folder + "/metrics.jsonl")) return {"recipe.yaml", "failures.jsonl"};  // a start that never trained
  try {  // the report page of what the folder holds now
    write_file_atomically(folder + "/report.html", run_report_html(read_run_history(folder), utc_now()));
  } catch (const std::exception& e) {
    log::warn("experiment tracking: no report page for {}: {}", folder, e.what());
  }
  std::vector<std::string> names{"report.html",     "recipe.yaml", "metrics.jsonl", "perf_summary.json",
                                 "provenance.json", "eval.json",   "failures.jsonl"};
  if (weights) names.push_back("model.pt");
  return names;
}

namespace {

// Ends the tracked run as the start ended. Never throws: a tracking problem is never training's.
void end_tracking(RunTracker& tracker, const std::string& folder, bool weights, RunEnd how, const std::string& error) {
  try {
    const bool stopped = how == RunEnd::kKilled;  // resumed soon: its artifacts go at the run's real end
    tracker.finish(how, error, stopped ? std::vector<std::string>{} : artifacts_to_upload(folder, weights),
                   stopped ? kStoppedWaitSeconds : kEndWaitSeconds);
  } catch (const std::exception& e) {
    log::warn("experiment tracking: the run's end was not sent: {}; `cvtrain track {}` sends it", e.what(), folder);
  }
}

// checkpoint.resume: PATH, a checkpoint of another run folder, continues that run, in MLflow too:
// the mlflow_run.json beside its checkpoints (PATH's run folder) comes along, unless this folder
// has one of its own.
void continue_resumed_run(const Recipe& recipe) {
  namespace fs = std::filesystem;
  const fs::path mine = fs::path(recipe.output) / kTrackedRunFile;
  if (recipe.checkpoint.resume.mode != ResumeMode::kFolder || fs::exists(mine)) return;
  fs::path folder = fs::absolute(recipe.checkpoint.resume.folder).lexically_normal();
  for (int up = 0; up < 3 && folder.has_relative_path(); ++up, folder = folder.parent_path()) {  // the checkpoint, checkpoints/, the run
    if (!fs::exists(folder / kTrackedRunFile)) continue;
    std::error_code error;
    fs::create_directories(recipe.output, error);
    fs::copy_file(folder / kTrackedRunFile, mine, error);
    if (!error) log::info("experiment tracking: continuing the MLflow run of {}", folder.string());
    return;
  }
}

}  // namespace

TrainSummary with_tracking(const Recipe& recipe, const RankInfo& rank, const std::function<TrainSummary()>& train) {
  const std::optional<TrackingSettings> settings = rank.rank == 0 ? tracking_settings(recipe.track.mlflow, recipe.output) : std::nullopt;
  if (!settings) return train();
  std::unique_ptr<RunTracker> tracker;
  try {
    continue_resumed_run(recipe);
    tracker = std::make_unique<RunTracker>(*settings, tracked_run(recipe, recipe.output, true));
  } catch (const std::exception& e) {
    log::warn("experiment tracking is off for this start: {}", e.what());
    return train();
  }
  TrainSummary summary;
  try {
    summary = train();
  } catch (const Stopped&) {
    end_tracking(*tracker, recipe.output, settings->log_weights, RunEnd::kKilled, "");
    throw;
  } catch (const std::exception& e) {
    end_tracking(*tracker, recipe.output, settings->log_weights, RunEnd::kFailed, first_line(e.what()));
    throw;
  }
  end_tracking(*tracker, recipe.output, settings->log_weights, RunEnd::kFinished, "");
  return summary;
}

}  // namespace cvtrain
