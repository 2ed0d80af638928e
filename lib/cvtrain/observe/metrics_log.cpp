// JSON lines by hand: the records are flat, so a JSON library would be all cost and no help.
#include "cvtrain/observe/metrics_log.h"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>

#include "cvtrain/core/error.h"
#include "cvtrain/core/text.h"
#include "cvtrain/observe/event_file.h"

namespace cvtrain {
namespace {

struct JsonText {
  std::string operator()(int64_t v) const { return std::to_string(v); }
  // 9 significant digits: a float's value round-trips, so runs can be compared exactly.
  std::string operator()(double v) const { return std::isfinite(v) ? fmt::format("{:.9g}", v) : "null"; }
  std::string operator()(const std::string& v) const { return json_string(v); }
};

}  // namespace

std::string to_json(const MetricRecord& record) {
  std::string out = "{";
  for (size_t i = 0; i < record.size(); ++i)
    out += (i ? ", " : "") + json_string(record[i].first) + ": " + std::visit(JsonText{}, record[i].second);
  return out + "}";
}

MetricsLog::MetricsLog(const std::string& path, const std::string& events_folder) : path_(path), file_(std::fopen(path.c_str(), "a")) {
  if (!file_) throw Error(fmt::format("{}: cannot open for writing ({})", path, std::strerror(errno)));
  if (!events_folder.empty()) events_ = std::make_unique<EventFile>(events_folder);
}

MetricsLog::~MetricsLog() { std::fclose(file_); }

void MetricsLog::write_line(const MetricRecord& record) {
  const std::string line = to_json(record) + "\n";
  if (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0)
    throw Error(fmt::format("{}: write failed ({})", path_, std::strerror(errno)));
}

void MetricsLog::write(const MetricRecord& record) {
  write_line(record);
  if (!events_) return;
  int64_t step = 0;
  for (const auto& [key, value] : record)
    if (key == "step" && std::holds_alternative<int64_t>(value)) step = std::get<int64_t>(value);
  events_->write_scalars(step, std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(),
                         scalars_of(record));
}

void MetricsLog::resumed_from(int64_t step) {
  write_line(MetricRecord{{"kind", std::string("resume")}, {"step", step}});
  if (events_)
    events_->write_session_start(step + 1, std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
}

std::vector<std::pair<std::string, double>> scalars_of(const MetricRecord& record) {
  std::string kind = "metrics";
  for (const auto& [key, value] : record)
    if (key == "kind" && std::holds_alternative<std::string>(value)) kind = std::get<std::string>(value);
  std::vector<std::pair<std::string, double>> scalars;
  for (const auto& [key, value] : record) {
    if (key == "step") continue;
    if (const auto* i = std::get_if<int64_t>(&value)) scalars.emplace_back(kind + "/" + key, static_cast<double>(*i));
    if (const auto* d = std::get_if<double>(&value)) scalars.emplace_back(kind + "/" + key, *d);
  }
  return scalars;
}

}  // namespace cvtrain
