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
  // A start that resumes from the checkpoint at `step`: a {"kind": "resume", "step"} line (the
  // report then leaves out what an earlier start logged after it), and in the event file a
  // SessionLog START at step + 1, on which TensorBoard drops the same, as PyTorch's
  // SummaryWriter(purge_step) asks.
  void resumed_from(int64_t step);

 private:
  void write_line(const MetricRecord& record);
  std::string path_;
  std::FILE* file_ = nullptr;
  std::unique_ptr<EventFile> events_;
};

// A record's numbers as TensorBoard scalars: ("train/loss", 0.52), ... ; `step` and strings left out.
std::vector<std::pair<std::string, double>> scalars_of(const MetricRecord& record);

}  // namespace cvtrain
