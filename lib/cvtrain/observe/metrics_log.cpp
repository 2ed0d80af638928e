// JSON lines by hand: the records are flat, so a JSON library would be all cost and no help.
#include "cvtrain/observe/metrics_log.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "cvtrain/core/error.h"

namespace cvtrain {
namespace {

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

struct JsonValue {
  std::string operator()(int64_t v) const { return std::to_string(v); }
  std::string operator()(double v) const { return std::isfinite(v) ? fmt::format("{:.6g}", v) : "null"; }
  std::string operator()(const std::string& v) const { return quoted(v); }
};

}  // namespace

std::string to_json(const MetricRecord& record) {
  std::string out = "{";
  for (size_t i = 0; i < record.size(); ++i)
    out += (i ? ", " : "") + quoted(record[i].first) + ": " + std::visit(JsonValue{}, record[i].second);
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
