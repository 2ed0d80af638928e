// metrics.jsonl: one JSON object per line, appended and flushed as training goes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace cvtrain {

using MetricValue = std::variant<int64_t, double, std::string>;
using MetricRecord = std::vector<std::pair<std::string, MetricValue>>;

std::string to_json(const MetricRecord& record);

class MetricsLog {
 public:
  explicit MetricsLog(const std::string& path);  // throws Error naming the path
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  void write(const MetricRecord& record);

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace cvtrain
