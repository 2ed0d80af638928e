// MLflow's tracking REST API (2.0) over libcurl: experiments, runs, batched metrics, params and
// tags, metric histories, and artifacts through the server's proxy (mlflow-artifacts). One client
// is used by one thread at a time; it keeps its connection between requests.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cvtrain/core/error.h"

namespace cvtrain {

// How the client proves who it is: MLflow's own variables, never a recipe or a file.
struct MlflowCredentials {
  std::string token;               // MLFLOW_TRACKING_TOKEN: "Authorization: Bearer"
  std::string username, password;  // MLFLOW_TRACKING_USERNAME / _PASSWORD: basic auth
  bool insecure_tls = false;       // MLFLOW_TRACKING_INSECURE_TLS=true
  std::string ca_file;             // MLFLOW_TRACKING_SERVER_CERT_PATH
};

struct MetricPoint {
  std::string key;  // "train/loss"
  double value = 0;
  int64_t step = 0;
  int64_t timestamp_ms = 0;
};

using Tags = std::vector<std::pair<std::string, std::string>>;

struct MlflowRun {
  std::string run_id, experiment_id, status, artifact_uri, lifecycle_stage;
  std::map<std::string, std::string> params, tags;
  std::vector<std::string> metric_keys;  // the keys with at least one point
};

// A request that did not succeed. `retryable`: a later try may work (no connection, a timeout, HTTP
// 429 or 5xx); otherwise it never will as it stands (401, 403, a request the server refuses).
class TrackingError : public Error {
 public:
  TrackingError(const std::string& what, bool retryable) : Error(what), retryable_(retryable) {}
  bool retryable() const { return retryable_; }

 private:
  bool retryable_;
};

// MLflow's limits on one log-batch request, and on a param's value (longer values become an artifact).
inline constexpr size_t kMaxBatchMetrics = 1000;
inline constexpr size_t kMaxBatchParams = 100;
inline constexpr size_t kMaxBatchTags = 100;
inline constexpr size_t kMaxParamValue = 6000;

class MlflowClient {
 public:
  // `uri`: http(s)://HOST:PORT[/PATH]; `timeout_s` bounds each request but an artifact upload.
  MlflowClient(std::string uri, MlflowCredentials credentials, double timeout_s = 30);
  ~MlflowClient();
  MlflowClient(const MlflowClient&) = delete;
  MlflowClient& operator=(const MlflowClient&) = delete;

  // The id of the experiment called `name`, created when there is none.
  std::string experiment_id(const std::string& name);
  MlflowRun create_run(const std::string& experiment_id, const std::string& run_name, int64_t start_ms, const Tags& tags);
  MlflowRun get_run(const std::string& run_id);
  // Any of the three may be empty; each within the kMaxBatch* limits.
  void log_batch(const std::string& run_id, const std::vector<MetricPoint>& metrics, const Tags& params, const Tags& tags);
  void delete_tag(const std::string& run_id, const std::string& key);
  // status: RUNNING, FINISHED, FAILED or KILLED; end_ms 0 leaves the end time unset.
  void update_run(const std::string& run_id, const std::string& status, int64_t end_ms);
  // The steps at which `key` has points in the run.
  std::set<int64_t> metric_steps(const std::string& run_id, const std::string& key);
  // Uploads the file at `path` as the run's artifact `name` (the run's artifact_uri must be the
  // server's proxy, mlflow-artifacts:, or a local folder).
  void upload_artifact(const MlflowRun& run, const std::string& name, const std::string& path);
  // The run's artifacts' names (top level).
  std::vector<std::string> artifact_names(const MlflowRun& run);

  // The address as messages show it: without any user:password@.
  const std::string& address() const { return shown_uri_; }

 private:
  using HeaderList = std::unique_ptr<void, void (*)(void*)>;  // a curl_slist
  HeaderList prepare(const std::string& url, std::string& answer, bool json);
  long perform(const std::string& where);
  std::string call(const std::string& method, const std::string& path, const std::string& body);
  std::string artifact_path(const MlflowRun& run, const std::string& name) const;

  std::string uri_, shown_uri_;
  MlflowCredentials credentials_;
  double timeout_s_;
  void* curl_ = nullptr;  // CURL*, kept out of this header
};

// `uri` without a user:password@ part.
std::string without_credentials(const std::string& uri);

}  // namespace cvtrain
