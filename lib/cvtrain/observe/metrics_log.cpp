// JSON lines by hand: the records are flat, so a JSON library would be all cost and no help.
#include "cvtrain/observe/metrics_log.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "cvtrain/core/error.h"
#include "cvtrain/core/text.h"

namespace cvtrain {
namespace {

struct JsonValue {
  std::string operator()(int64_t v) const { return std::to_string(v); }
  // 9 significant digits: a float's value round-trips, so runs can be compared exactly.
  std::string operator()(double v) const { return std::isfinite(v) ? fmt::format("{:.9g}", v) : "null"; }
  std::string operator()(const std::string& v) const { return json_string(v); }
};

}  // namespace

std::string to_json(const MetricRecord& record) {
  std::string out = "{";
  for (size_t i = 0; i < record.size(); ++i)
    out += (i ? ", " : "") + json_string(record[i].first) + ": " + std::visit(JsonValue{}, record[i].second);
  return out + "}";
}

MetricsLog::MetricsLog(const std::string& path) : path_(path), file_(std::fopen(path.c_str(), "a")) {
  if (!file_) throw Error(fmt::format("{}: cannot open for writing ({})", path, std::strerror(errno)));
}

MetricsLog::~MetricsLog() { std::fclose(file_); }

void MetricsLog::write(const MetricRecord& record) {
  const std::string line = to_json(record) + "\n";
  if (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0)
    throw Error(fmt::format("{}: write failed ({})", path_, std::strerror(errno)));
}

}  // namespace cvtrain
