// The sweep's parent run: created when the sweep starts (reopened when it continues), ended with
// its results once every trial is done.
#include "cvtrain/sweep/sweep_tracking.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/core/text.h"
#include "cvtrain/core/text_file.h"
#include "cvtrain/core/this_machine.h"
#include "cvtrain/core/version.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/recipe/sweep_space.h"
#include "cvtrain/sweep/sweep_report.h"

namespace cvtrain {
namespace {

constexpr double kParentWaitSeconds = 15;  // what the first trial waits, at most, for the parent run to exist
constexpr double kEndWaitSeconds = 60;

// A dimension as the space file writes it: [a, b] for choices, {uniform: [low, high]} for ranges.
std::string spelled(const SearchDimension& d) {
  using Kind = SearchDimension::Kind;
  if (d.kind == Kind::kChoice) return "[" + join(d.choices, ", ") + "]";
  const char* kind = d.kind == Kind::kUniform ? "uniform" : d.kind == Kind::kLogUniform ? "loguniform" : "int";
  return fmt::format("{{{}: [{}, {}]}}", kind, d.low, d.high);
}

}  // namespace

TrackedRun tracked_sweep(const SweepSpace& space, const std::string& folder, bool live) {
  TrackedRun run;
  run.folder = folder;
  run.live = live;
  run.ready_file = "space.yaml";
  run.params = {{"sweep.metric", space.metric},
                {"sweep.mode", space.maximize ? "max" : "min"},
                {"sweep.trials", std::to_string(space.trials)},
                {"sweep.parallel", std::to_string(space.parallel)},
                {"sweep.seed", std::to_string(space.seed)},
                {"sweep.early_stopping.grace", std::to_string(space.grace_epochs)}};
  run.params.emplace_back("sweep.sampler", sampler_name(space.sampler));
  for (const SearchDimension& d : space.dimensions) run.params.emplace_back("sweep.space." + d.key, spelled(d));
  run.tags = {
      {"mlflow.source.name", "cvtrain sweep"}, {"cvtrain.version", kVersion}, {"cvtrain.host", host_name()}, {"cvtrain.kind", "sweep"}};
  return run;
}

std::vector<std::string> sweep_artifacts(const std::string& folder) {
  try {
    write_file_atomically(folder + "/report.html", sweep_report_html(read_sweep_history(folder), utc_now()));
  } catch (const Error& e) {
    log::warn("experiment tracking: no report page for the sweep {}: {}", folder, e.what());
  }
  return {"report.html", "results.md", "space.yaml", "sweep.jsonl", "best_recipe.yaml"};
}

SweepTracking::SweepTracking(const Recipe& base, const SweepSpace& space, const std::string& folder)
    : folder_(folder), metric_(space.metric), maximize_(space.maximize) {
  MlflowSpec spec = base.track.mlflow;
  if (spec.run_name.empty()) spec.run_name = std::filesystem::path(folder).lexically_normal().filename().string();
  const auto settings = tracking_settings(spec, folder);
  if (!settings) return;
  try {
    tracker_ = std::make_unique<RunTracker>(*settings, tracked_sweep(space, folder, true));
  } catch (const std::exception& e) {  // the sweep goes on untracked
    log::warn("experiment tracking is off for this sweep: {}", e.what());
  }
}

SweepTracking::~SweepTracking() = default;

std::string SweepTracking::parent_run_id() {
  if (!tracker_) return "";
  std::string id = tracker_->wait_for_run_id(kParentWaitSeconds);
  if (id.empty())
    log::warn("experiment tracking: the sweep's MLflow run was not created within {:.0f} s; each trial is tracked as a run of its own",
              kParentWaitSeconds);
  return id;
}

void SweepTracking::trial_reported(int64_t trial, std::optional<double> metric) {
  if (!tracker_) return;
  if (metric && std::isfinite(*metric) && (!best_ || (maximize_ ? *metric > *best_ : *metric < *best_))) best_ = metric;
  const auto number = [](std::optional<double> v) { return v && std::isfinite(*v) ? fmt::format("{}", *v) : std::string("null"); };
  const std::string line = fmt::format("{{\"kind\": \"sweep\", \"step\": {}, \"trial\": {}, \"{}\": {}, \"best_{}\": {}}}\n", ++reports_,
                                       trial, metric_, number(metric), metric_, number(best_));
  std::ofstream(folder_ + "/metrics.jsonl", std::ios::app) << line;
}

void SweepTracking::finish(bool stopped) {
  if (!tracker_) return;
  try {
    tracker_->finish(stopped ? RunEnd::kKilled : RunEnd::kFinished, "", stopped ? std::vector<std::string>{} : sweep_artifacts(folder_),
                     kEndWaitSeconds);
  } catch (const std::exception& e) {
    log::warn("experiment tracking: the sweep's end was not sent: {}; `cvtrain track {}` sends it", e.what(), folder_);
  }
}

}  // namespace cvtrain
