// MLflow's REST API over libcurl: JSON bodies written here, answers read with core's JSON reader,
// and every failure turned into a TrackingError that says whether a later try may succeed.
#include "cvtrain/track/mlflow_client.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>

#include "cvtrain/core/json_reader.h"
#include "cvtrain/core/text.h"

namespace cvtrain {
namespace {

CURL* handle(void* curl) { return static_cast<CURL*>(curl); }

size_t append_body(char* data, size_t size, size_t count, void* body) {
  static_cast<std::string*>(body)->append(data, size * count);
  return size * count;
}

// protobuf's JSON for a double: NaN and the infinities as strings, every other value exactly.
std::string json_double(double v) {
  if (std::isnan(v)) return "\"NaN\"";
  if (std::isinf(v)) return v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  return fmt::format("{}", v);
}

std::string key_values(const Tags& pairs) {
  std::string out = "[";
  for (const auto& [key, value] : pairs)
    out += fmt::format("{}{{\"key\":{},\"value\":{}}}", out.size() > 1 ? "," : "", json_string(key), json_string(value));
  return out + "]";
}

// int64 fields arrive as numbers or, in protobuf's JSON, as strings.
int64_t json_int(const JsonValue& v) {
  if (const auto n = v.number()) return static_cast<int64_t>(*n);
  if (const auto s = v.string()) return std::stoll(*s);
  return 0;
}

MlflowRun run_of(const JsonValue& run) {
  MlflowRun out;
  const JsonValue& info = run["info"];
  out.run_id = info.text("run_id");
  out.experiment_id = info.text("experiment_id");
  out.status = info.text("status");
  out.artifact_uri = info.text("artifact_uri");
  out.lifecycle_stage = info.text("lifecycle_stage");
  const JsonValue& data = run["data"];
  for (const JsonValue& p : data["params"].array()) out.params[p.text("key")] = p.text("value");
  for (const JsonValue& t : data["tags"].array()) out.tags[t.text("key")] = t.text("value");
  for (const JsonValue& m : data["metrics"].array()) out.metric_keys.push_back(m.text("key"));
  return out;
}

std::string url_encoded(CURL* curl, const std::string& text) {
  std::unique_ptr<char, decltype(&curl_free)> escaped(curl_easy_escape(curl, text.c_str(), static_cast<int>(text.size())), curl_free);
  return escaped ? std::string(escaped.get()) : text;
}

}  // namespace

std::string without_credentials(const std::string& uri) {
  const size_t scheme = uri.find("://");
  if (scheme == std::string::npos) return uri;
  const size_t host = scheme + 3;
  const size_t at = uri.find('@', host);
  if (at == std::string::npos || at > uri.find('/', host)) return uri;
  return uri.substr(0, host) + uri.substr(at + 1);
}

MlflowClient::MlflowClient(std::string uri, MlflowCredentials credentials, double timeout_s)
    : uri_(std::move(uri)), shown_uri_(without_credentials(uri_)), credentials_(std::move(credentials)), timeout_s_(timeout_s) {
  while (!uri_.empty() && uri_.back() == '/') uri_.pop_back();
  static std::once_flag global;
  std::call_once(global, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  curl_ = curl_easy_init();
  if (!curl_) throw TrackingError("libcurl could not start a session", false);
}

MlflowClient::~MlflowClient() { curl_easy_cleanup(handle(curl_)); }

// The options every request shares: address, connection, where the answer goes, credentials.
MlflowClient::HeaderList MlflowClient::prepare(const std::string& url, std::string& answer, bool json) {
  CURL* curl = handle(curl_);
  curl_easy_reset(curl);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // a thread of a training process: no SIGALRM for timeouts
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer);
  curl_slist* headers = json ? curl_slist_append(nullptr, "Content-Type: application/json") : nullptr;
  if (!credentials_.token.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + credentials_.token).c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  if (!credentials_.username.empty()) {
    curl_easy_setopt(curl, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(curl, CURLOPT_USERNAME, credentials_.username.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, credentials_.password.c_str());
  }
  if (credentials_.insecure_tls) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!credentials_.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, credentials_.ca_file.c_str());
  return HeaderList(headers, [](void* list) { curl_slist_free_all(static_cast<curl_slist*>(list)); });
}

// Sends the prepared request; the HTTP status, or a retryable TrackingError when none came.
long MlflowClient::perform(const std::string& where) {
  CURL* curl = handle(curl_);
  const CURLcode code = curl_easy_perform(curl);
  if (code != CURLE_OK) throw TrackingError(fmt::format("{}: {}", where, curl_easy_strerror(code)), true);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  return status;
}

std::string MlflowClient::call(const std::string& method, const std::string& path, const std::string& body) {
  CURL* curl = handle(curl_);
  std::string answer;
  const auto headers = prepare(uri_ + path, answer, true);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_s_ * 1000));
  if (method == "POST") {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  const std::string where = fmt::format("MLflow at {}: {} {}", shown_uri_, method, path.substr(0, path.find('?')));
  const long status = perform(where);
  if (status >= 200 && status < 300) return answer;
  std::string reason = answer.substr(0, 300);
  try {  // MLflow's errors: {"error_code": "...", "message": "..."}
    const JsonValue error = parse_json(answer, where);
    if (!error.text("message").empty()) reason = error.text("error_code") + ": " + error.text("message");
  } catch (const Error&) {
  }
  throw TrackingError(fmt::format("{}: HTTP {} {}", where, status, reason), status == 429 || status >= 500);
}

std::string MlflowClient::experiment_id(const std::string& name) {
  CURL* curl = handle(curl_);
  const auto existing = [&]() -> std::string {
    try {
      const std::string answer = call("GET", "/api/2.0/mlflow/experiments/get-by-name?experiment_name=" + url_encoded(curl, name), "");
      return parse_json(answer, "get-by-name")["experiment"].text("experiment_id");
    } catch (const TrackingError& e) {
      if (e.retryable() || std::string(e.what()).find("RESOURCE_DOES_NOT_EXIST") == std::string::npos) throw;
      return "";
    }
  };
  if (std::string id = existing(); !id.empty()) return id;
  try {
    const std::string answer = call("POST", "/api/2.0/mlflow/experiments/create", fmt::format("{{\"name\":{}}}", json_string(name)));
    return parse_json(answer, "experiments/create").text("experiment_id");
  } catch (const TrackingError& e) {  // another process created it in between
    if (std::string(e.what()).find("RESOURCE_ALREADY_EXISTS") == std::string::npos) throw;
    return existing();
  }
}

MlflowRun MlflowClient::create_run(const std::string& experiment_id, const std::string& run_name, int64_t start_ms, const Tags& tags) {
  const std::string body = fmt::format(R"({{"experiment_id":{},"run_name":{},"start_time":{},"tags":{}}})", json_string(experiment_id),
                                       json_string(run_name), start_ms, key_values(tags));
  return run_of(parse_json(call("POST", "/api/2.0/mlflow/runs/create", body), "runs/create")["run"]);
}

MlflowRun MlflowClient::get_run(const std::string& run_id) {
  return run_of(parse_json(call("GET", "/api/2.0/mlflow/runs/get?run_id=" + url_encoded(handle(curl_), run_id), ""), "runs/get")["run"]);
}

void MlflowClient::log_batch(const std::string& run_id, const std::vector<MetricPoint>& metrics, const Tags& params, const Tags& tags) {
  std::string points = "[";
  for (const MetricPoint& m : metrics)
    points += fmt::format(R"({}{{"key":{},"value":{},"timestamp":{},"step":{}}})", points.size() > 1 ? "," : "", json_string(m.key),
                          json_double(m.value), m.timestamp_ms, m.step);
  points += "]";
  call("POST", "/api/2.0/mlflow/runs/log-batch",
       fmt::format(R"({{"run_id":{},"metrics":{},"params":{},"tags":{}}})", json_string(run_id), points, key_values(params),
                   key_values(tags)));
}

void MlflowClient::delete_tag(const std::string& run_id, const std::string& key) {
  call("POST", "/api/2.0/mlflow/runs/delete-tag", fmt::format(R"({{"run_id":{},"key":{}}})", json_string(run_id), json_string(key)));
}

void MlflowClient::update_run(const std::string& run_id, const std::string& status, int64_t end_ms) {
  const std::string end = end_ms > 0 ? fmt::format(",\"end_time\":{}", end_ms) : "";
  call("POST", "/api/2.0/mlflow/runs/update",
       fmt::format(R"({{"run_id":{},"status":{}{}}})", json_string(run_id), json_string(status), end));
}

std::set<int64_t> MlflowClient::metric_steps(const std::string& run_id, const std::string& key) {
  CURL* curl = handle(curl_);
  std::set<int64_t> steps;
  std::string page;
  do {
    std::string path = fmt::format("/api/2.0/mlflow/metrics/get-history?run_id={}&metric_key={}&max_results=25000",
                                   url_encoded(curl, run_id), url_encoded(curl, key));
    if (!page.empty()) path += "&page_token=" + url_encoded(curl, page);
    const JsonValue answer = parse_json(call("GET", path, ""), "metrics/get-history");
    for (const JsonValue& m : answer["metrics"].array()) steps.insert(json_int(m["step"]));
    page = answer.text("next_page_token");
  } while (!page.empty());
  return steps;
}

// mlflow-artifacts:/1/RUN/artifacts (or mlflow-artifacts://HOST/...) -> 1/RUN/artifacts/NAME, the
// path under the server's /api/2.0/mlflow-artifacts/artifacts/.
std::string MlflowClient::artifact_path(const MlflowRun& run, const std::string& name) const {
  const std::string scheme = "mlflow-artifacts:";
  std::string rest = run.artifact_uri.substr(scheme.size());
  if (rest.rfind("//", 0) == 0) rest = rest.substr(std::min(rest.size(), rest.find('/', 2)));
  while (!rest.empty() && rest.front() == '/') rest.erase(0, 1);
  return rest + "/" + name;
}

void MlflowClient::upload_artifact(const MlflowRun& run, const std::string& name, const std::string& path) {
  namespace fs = std::filesystem;
  const std::string& root = run.artifact_uri;
  if (root.rfind("file://", 0) == 0 || root.rfind('/', 0) == 0) {  // a store on this machine's file system
    const fs::path folder = root.rfind("file://", 0) == 0 ? root.substr(7) : root;
    std::error_code error;
    fs::create_directories(folder, error);
    fs::copy_file(path, folder / name, fs::copy_options::overwrite_existing, error);
    if (error)
      throw TrackingError(fmt::format("copying {} into the run's artifacts {}: {}", path, folder.string(), error.message()), false);
    return;
  }
  if (root.rfind("mlflow-artifacts:", 0) != 0)
    throw TrackingError(fmt::format("the run's artifacts go to {}, which cvtrain cannot write: start the server with --serve-artifacts "
                                    "(MLflow's default) so that artifacts go through it",
                                    root),
                        false);
  std::unique_ptr<std::FILE, decltype(&std::fclose)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!file) throw TrackingError("cannot read the artifact " + path, false);
  CURL* curl = handle(curl_);
  std::string answer;
  const auto headers = prepare(uri_ + "/api/2.0/mlflow-artifacts/artifacts/" + artifact_path(run, name), answer, false);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1024L);  // weights take as long as they take, a stalled upload does not
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, static_cast<long>(timeout_s_));
  curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
  curl_easy_setopt(curl, CURLOPT_READDATA, file.get());
  curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(std::filesystem::file_size(path)));
  const std::string where = fmt::format("MLflow at {}: uploading {}", shown_uri_, name);
  const long status = perform(where);
  if (status < 200 || status >= 300)
    throw TrackingError(fmt::format("{}: HTTP {} {}", where, status, answer.substr(0, 300)), status == 429 || status >= 500);
}

std::vector<std::string> MlflowClient::artifact_names(const MlflowRun& run) {
  const JsonValue answer =
      parse_json(call("GET", "/api/2.0/mlflow/artifacts/list?run_id=" + url_encoded(handle(curl_), run.run_id), ""), "artifacts/list");
  std::vector<std::string> names;
  for (const JsonValue& f : answer["files"].array()) names.push_back(f.text("path"));
  return names;
}

}  // namespace cvtrain
