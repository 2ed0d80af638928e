// A run folder's metrics as they grow: every earlier start's metrics.N.jsonl (N ascending), then
// metrics.jsonl followed as it is written, reopened when a new start rotates it away. Only complete
// lines are handed out, each once, as MLflow metric points. metrics.jsonl is the tracker's queue:
// what the server has not taken yet waits on disk, never in memory.
#pragma once

#include <cstdint>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "cvtrain/track/mlflow_client.h"

namespace cvtrain {

class JsonValue;

// One metrics.jsonl line's numbers as MLflow points: KIND/KEY ("train/loss", "epoch/top1", the
// names TensorBoard shows) at the line's step; null (a NaN in the run) as NaN; `resume` lines and
// strings give none.
std::vector<MetricPoint> metric_points(const JsonValue& line, int64_t timestamp_ms);

class MetricsTail {
 public:
  explicit MetricsTail(std::string folder);
  // Up to about `limit` points from the lines written since the last call (whole lines: a line is
  // never split); empty when no complete new line is there.
  std::vector<MetricPoint> next(size_t limit, int64_t timestamp_ms);
  // Whether every file was read to its end (a partial last line does not count).
  bool at_end() const { return at_end_; }

 private:
  bool open_next_file();
  std::string folder_;
  std::string current_;  // the file being read
  std::ifstream in_;
  uint64_t inode_ = 0;
  std::set<uint64_t> seen_;  // the files opened so far
  bool live_ = false;        // current_ is metrics.jsonl
  bool at_end_ = false;
};

}  // namespace cvtrain
