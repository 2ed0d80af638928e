// One run in MLflow, kept up to date from its run folder by a thread of its own: the run created (or
// reopened from OUTPUT/mlflow_run.json, so that a resumed run stays one run) with the recipe as
// params and cvtrain's tags, every metrics line sent in batches, and at the end the artifacts and the
// status. The training thread never waits for it: a slow or unreachable server is retried with
// backoff and warned about once, and what it did not take stays in metrics.jsonl for `cvtrain track`.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cvtrain/track/metrics_tail.h"
#include "cvtrain/track/mlflow_client.h"
#include "cvtrain/track/tracking_settings.h"

namespace cvtrain {

inline constexpr const char* kTrackedRunFile = "mlflow_run.json";  // OUTPUT/: which MLflow run this folder is

// How a run ended, as MLflow's RunStatus says it.
enum class RunEnd { kFinished, kFailed, kKilled };
const char* mlflow_status(RunEnd end);

struct TrackedRun {
  std::string folder;                      // the run folder: metrics*.jsonl, provenance.json and the artifacts
  Tags params;                             // the resolved recipe's keys and values
  Tags tags;                               // cvtrain's own (version, revision, host, user), before the recipe's
  bool live = true;                        // a start that trains now (the run is set RUNNING); false: `cvtrain track` afterwards
  std::string ready_file = "recipe.yaml";  // the folder is set up once it holds this (a sweep's: space.yaml)
};

class RunTracker {
 public:
  RunTracker(TrackingSettings settings, TrackedRun run);
  ~RunTracker();  // stops the thread without an end status (finish() sets one)
  RunTracker(const RunTracker&) = delete;
  RunTracker& operator=(const RunTracker&) = delete;

  // Ends the run: the metrics not sent yet, then `artifacts` (names in the folder, those present),
  // then the status (with `error_line` for a failure). Waits at most `wait_s`, and gives up sooner
  // when the server stays unreachable. Returns whether everything reached the server.
  bool finish(RunEnd end, const std::string& error_line, const std::vector<std::string>& artifacts, double wait_s);

  // The MLflow run's id once it exists ("" before, or when tracking gave up).
  std::string run_id() const;
  // The same, waiting up to `seconds` for the thread to create or reopen the run.
  std::string wait_for_run_id(double seconds) const;

 private:
  void work();
  bool step();  // one piece of work; false when there is nothing to do for now
  void open_run();
  bool send_metrics();
  void send_end();
  Tags provenance_tags() const;
  void wait_for(double seconds);

  TrackingSettings settings_;
  TrackedRun run_;
  std::unique_ptr<MlflowClient> client_;
  MetricsTail tail_;
  std::optional<MlflowRun> mlflow_run_;
  std::map<std::string, std::set<int64_t>> sent_steps_;  // what the server holds, by key: nothing is sent twice
  std::vector<MetricPoint> pending_;                     // read, not yet taken by the server (at most a batch)
  std::set<std::string> uploaded_;
  bool provenance_sent_ = false;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool finishing_ = false, stopping_ = false, delivered_ = false;
  RunEnd end_ = RunEnd::kFinished;
  std::string error_line_;
  std::vector<std::string> artifacts_;
  double deadline_ = 0;  // steady seconds
  std::thread thread_;
};

}  // namespace cvtrain
