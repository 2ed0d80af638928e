// metrics.jsonl: one JSON object per line, appended and flushed as training goes; with an events
// folder, every number of each record also as a TensorBoard scalar (KIND/KEY at the record's step).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace cvtrain {

using MetricValue = std::variant<int64_t, double, std::string>;
using MetricRecord = std::vector<std::pair<std::string, MetricValue>>;

std::string to_json(const MetricRecord& record);

class EventFile;

class MetricsLog {
 public:
  // Throws Error naming the path. `events_folder`: where the TensorBoard event file goes ("": none).
  explicit MetricsLog(const std::string& path, const std::string& events_folder = "");
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  void write(const MetricRecord& record);
  // A start that resumes at `step`: the event file says so (a SessionLog START), and TensorBoard
  // drops what an earlier start logged from that step on, as PyTorch's SummaryWriter(purge_step) asks.
  void restart_at(int64_t step);

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  std::unique_ptr<EventFile> events_;
};

// A record's numbers as TensorBoard scalars: ("train/loss", 0.52), ... ; `step` and strings left out.
std::vector<std::pair<std::string, double>> scalars_of(const MetricRecord& record);

}  // namespace cvtrain
