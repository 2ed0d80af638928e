// The tracking thread: open the MLflow run, send the params, follow metrics.jsonl in batches, and
// at the end the artifacts and the status; every failure retried with backoff, warned about once.
#include "cvtrain/track/run_tracker.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "cvtrain/core/json_reader.h"
#include "cvtrain/core/log.h"
#include "cvtrain/core/text.h"
#include "cvtrain/core/text_file.h"

namespace cvtrain {
namespace {

constexpr double kPollSeconds = 1.0;  // how often a quiet metrics.jsonl is looked at
constexpr double kMaxBackoffSeconds = 30;
// A failed start's error: a tag of cvtrain's, and the run's description (MLflow's note) in the UI.
constexpr const char* kErrorTag = "cvtrain.error";
constexpr const char* kNoteTag = "mlflow.note.content";
const std::string kFailedNote = "Failed: ";

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double steady_seconds() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string tracked_run_json(const std::string& address, const MlflowRun& run) {
  return fmt::format("{{\n  \"tracking_uri\": {},\n  \"experiment_id\": {},\n  \"run_id\": {}\n}}\n", json_string(address),
                     json_string(run.experiment_id), json_string(run.run_id));
}

}  // namespace

const char* mlflow_status(RunEnd end) {
  switch (end) {
    case RunEnd::kFinished:
      return "FINISHED";
    case RunEnd::kFailed:
      return "FAILED";
    case RunEnd::kKilled:
      return "KILLED";
  }
  return "FINISHED";
}

RunTracker::RunTracker(TrackingSettings settings, TrackedRun run)
    : settings_(std::move(settings)),
      run_(std::move(run)),
      client_(std::make_unique<MlflowClient>(settings_.uri, settings_.credentials)),
      tail_(run_.folder) {
  thread_ = std::thread([this] { work(); });
}

RunTracker::~RunTracker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string RunTracker::run_id() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return mlflow_run_ ? mlflow_run_->run_id : "";
}

std::string RunTracker::wait_for_run_id(double seconds) const {
  const double deadline = steady_seconds() + seconds;
  std::string id = run_id();
  for (; id.empty() && steady_seconds() < deadline; id = run_id()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return id;
}

bool RunTracker::finish(RunEnd end, const std::string& error_line, const std::vector<std::string>& artifacts, double wait_s) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    finishing_ = true;
    end_ = end;
    error_line_ = error_line;
    artifacts_ = artifacts;
    deadline_ = steady_seconds() + wait_s;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  return delivered_;
}

void RunTracker::wait_for(double seconds) {
  std::unique_lock<std::mutex> lock(mutex_);
  const bool was_finishing = finishing_;
  wake_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return stopping_ || finishing_ != was_finishing; });
}

// Runs until the end is delivered, tracking gives up, or the tracker is destroyed. A failure the
// server may recover from is retried with a doubling pause; one it never will stops tracking.
void RunTracker::work() {
  const std::string later = fmt::format("`cvtrain track {}` sends what is missing", run_.folder);
  double backoff = 1;
  bool warned = false;
  int failures_at_end = 0;
  for (;;) {
    bool finishing = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_ || delivered_) return;
      finishing = finishing_;
      if (finishing && steady_seconds() > deadline_) {
        log::warn("experiment tracking: MLflow at {} did not take everything in the time given; {}", client_->address(), later);
        return;
      }
    }
    try {
      const bool busy = step();
      if (warned) log::info("experiment tracking: MLflow at {} answers again; catching up from metrics.jsonl", client_->address());
      warned = false;
      backoff = 1;
      if (!busy) wait_for(kPollSeconds);
    } catch (const TrackingError& e) {
      if (!e.retryable()) {
        log::warn("experiment tracking stops: {}. {}metrics.jsonl keeps everything, and once that is fixed {}", e.what(),
                  run_.live ? "Training goes on; " : "", later);
        return;
      }
      if (!warned)
        log::warn("experiment tracking: {}; {} (up to every {:.0f} s)", e.what(),
                  run_.live ? "training goes on, and the tracker retries" : "retrying", kMaxBackoffSeconds);
      warned = true;
      if (finishing && ++failures_at_end >= 2) {  // the run is over: nobody should wait for a server that is down
        log::warn("experiment tracking: MLflow at {} is unreachable at the end of the run; {}", client_->address(), later);
        return;
      }
      wait_for(finishing ? 1.0 : backoff);  // at the end, one more try soon, not after a long pause
      backoff = std::min(2 * backoff, kMaxBackoffSeconds);
    } catch (const std::exception& e) {  // a folder that cannot be written, a damaged answer: never training's problem
      log::warn("experiment tracking stops: {}. {}{}", e.what(), run_.live ? "Training goes on; " : "", later);
      return;
    }
  }
}

bool RunTracker::step() {
  if (!mlflow_run_) {
    // The run is tracked once its folder is set up (the resolved recipe written): a start that
    // fails before that has no run to show, and nothing is created for it.
    if (!std::filesystem::exists(run_.folder + "/" + run_.ready_file)) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (finishing_) stopping_ = true;
      return false;
    }
    open_run();
    return true;
  }
  if (send_metrics()) return true;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!finishing_) return false;
  }
  send_end();
  std::lock_guard<std::mutex> lock(mutex_);
  delivered_ = true;
  return true;
}

// The run this folder already has on this server (a resumed or replayed run), else a new one; then
// the params it lacks (MLflow never changes a param's value) and what the server holds, so that
// nothing is sent twice.
void RunTracker::open_run() {
  std::optional<MlflowRun> found;
  if (const auto saved = read_text_file(run_.folder + "/" + kTrackedRunFile)) {
    const JsonValue json = parse_json(*saved, run_.folder + "/" + kTrackedRunFile);
    if (json.text("tracking_uri") == client_->address()) {
      try {
        found = client_->get_run(json.text("run_id"));
        if (found->lifecycle_stage == "deleted") found.reset();
      } catch (const TrackingError& e) {
        if (e.retryable()) throw;
        log::warn("experiment tracking: run {} of {} is gone ({}); a new run starts", json.text("run_id"), kTrackedRunFile, e.what());
      }
    }
  }
  if (found) {
    for (const std::string& key : found->metric_keys) sent_steps_[key] = client_->metric_steps(found->run_id, key);
    if (run_.live) client_->update_run(found->run_id, "RUNNING", 0);
    // An earlier start's failure (a group restarted after it, a run resumed): no longer what the run says.
    if (found->tags.count(kErrorTag)) client_->delete_tag(found->run_id, kErrorTag);
    if (found->tags.count(kNoteTag) && found->tags[kNoteTag].rfind(kFailedNote, 0) == 0) client_->delete_tag(found->run_id, kNoteTag);
  } else {
    Tags tags = run_.tags;
    tags.insert(tags.end(), settings_.tags.begin(), settings_.tags.end());
    if (!settings_.parent_run_id.empty()) tags.emplace_back("mlflow.parentRunId", settings_.parent_run_id);
    found = client_->create_run(client_->experiment_id(settings_.experiment), settings_.run_name, now_ms(), tags);
    write_file_atomically(run_.folder + "/" + kTrackedRunFile, tracked_run_json(client_->address(), *found));
  }
  Tags params;
  for (const auto& [key, value] : run_.params)
    if (value.size() <= kMaxParamValue && found->params.count(key) == 0) params.emplace_back(key, value);
  for (size_t i = 0; i < params.size(); i += kMaxBatchParams)
    client_->log_batch(found->run_id, {}, Tags(params.begin() + i, params.begin() + std::min(params.size(), i + kMaxBatchParams)), {});
  log::info("experiment tracking: {} run {} in MLflow at {}", run_.live ? "this start logs to" : "sending to", found->run_id,
            client_->address());
  std::lock_guard<std::mutex> lock(mutex_);
  mlflow_run_ = std::move(found);
}

// One batch of points the server does not hold yet; false when metrics.jsonl has nothing new.
bool RunTracker::send_metrics() {
  if (pending_.empty()) {
    for (MetricPoint& point : tail_.next(kMaxBatchMetrics, now_ms()))
      if (sent_steps_[point.key].count(point.step) == 0) pending_.push_back(std::move(point));
    std::set<std::pair<std::string, int64_t>> in_batch;  // a step logged twice in the files (a resumed start's overlap): once
    pending_.erase(
        std::remove_if(pending_.begin(), pending_.end(), [&](const MetricPoint& p) { return !in_batch.emplace(p.key, p.step).second; }),
        pending_.end());
  }
  Tags tags;
  if (!provenance_sent_) tags = provenance_tags();
  if (pending_.empty() && tags.empty()) return false;
  const size_t count = std::min(pending_.size(), kMaxBatchMetrics);
  const std::vector<MetricPoint> batch(pending_.begin(), pending_.begin() + count);
  client_->log_batch(mlflow_run_->run_id, batch, {}, tags);
  provenance_sent_ = provenance_sent_ || !tags.empty();
  for (const MetricPoint& point : batch) sent_steps_[point.key].insert(point.step);
  pending_.erase(pending_.begin(), pending_.begin() + count);
  return true;
}

// What provenance.json says about where the run ran; none until it is there.
Tags RunTracker::provenance_tags() const {
  const auto text = read_text_file(run_.folder + "/provenance.json");
  if (!text) return {};
  try {
    const JsonValue p = parse_json(*text, run_.folder + "/provenance.json");
    Tags tags{{"cvtrain.world_size", fmt::format("{}", p.number("world_size").value_or(1))}, {"cvtrain.device", p.text("device")}};
    for (const char* row : {"strategy", "precision", "batch", "optimizer", "decoder", "workers"})
      if (!p["plan"].text(row).empty()) tags.emplace_back(std::string("cvtrain.") + row, p["plan"].text(row));
    return tags;
  } catch (const Error&) {
    return {};  // being written: the next look
  }
}

void RunTracker::send_end() {
  RunEnd end;
  std::string error_line;
  std::vector<std::string> artifacts;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    end = end_;
    error_line = error_line_;
    artifacts = artifacts_;
  }
  for (const std::string& name : artifacts) {
    const std::string path = run_.folder + "/" + name;
    if (uploaded_.count(name) || !std::filesystem::is_regular_file(path)) continue;
    try {
      client_->upload_artifact(*mlflow_run_, name, path);
    } catch (const TrackingError& e) {  // an artifact store cvtrain cannot write: the run still gets its status
      if (e.retryable()) throw;
      log::warn("experiment tracking: {}", e.what());
    }
    uploaded_.insert(name);
  }
  Tags tags = provenance_tags();
  if (end == RunEnd::kFailed && !error_line.empty()) {
    tags.emplace_back(kErrorTag, error_line.substr(0, 5000));
    tags.emplace_back(kNoteTag, kFailedNote + error_line.substr(0, 5000));
  }
  if (!tags.empty()) client_->log_batch(mlflow_run_->run_id, {}, {}, tags);
  client_->update_run(mlflow_run_->run_id, mlflow_status(end), now_ms());
  log::info("experiment tracking: run {} in MLflow at {} ended {}", mlflow_run_->run_id, client_->address(), mlflow_status(end));
}

}  // namespace cvtrain
