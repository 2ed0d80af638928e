// Reading a run's metrics files in order, whole lines only, and following metrics.jsonl across the
// rotation a new start does (the inode at its path changes).
#include "cvtrain/track/metrics_tail.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "cvtrain/core/json_reader.h"
#include "cvtrain/core/log.h"

namespace cvtrain {
namespace {

uint64_t inode_of(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 ? static_cast<uint64_t>(info.st_ino) : 0;
}

// metrics.N.jsonl of earlier starts, N ascending.
std::vector<std::string> rotated_files(const std::string& folder) {
  std::vector<std::pair<long, std::string>> found;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("metrics.", 0) != 0 || name.size() < 15 || name.substr(name.size() - 6) != ".jsonl") continue;
    const std::string number = name.substr(8, name.size() - 14);
    if (number.empty() || !std::all_of(number.begin(), number.end(), ::isdigit)) continue;
    found.emplace_back(std::stol(number), entry.path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> files;
  for (auto& [n, path] : found) files.push_back(std::move(path));
  return files;
}

}  // namespace

std::vector<MetricPoint> metric_points(const JsonValue& line, int64_t timestamp_ms) {
  std::vector<MetricPoint> points;
  const std::string kind = line.text("kind").empty() ? "metrics" : line.text("kind");
  const std::optional<double> step = line.number("step");
  if (kind == "resume" || !step) return points;
  for (const auto& [key, value] : line.object()) {
    if (key == "step" || key == "kind") continue;
    if (value.is_number()) points.push_back({kind + "/" + key, *value.number(), static_cast<int64_t>(*step), timestamp_ms});
    if (value.is_null())
      points.push_back({kind + "/" + key, std::numeric_limits<double>::quiet_NaN(), static_cast<int64_t>(*step), timestamp_ms});
  }
  return points;
}

MetricsTail::MetricsTail(std::string folder) : folder_(std::move(folder)) {}

// The oldest rotated file not read yet, else metrics.jsonl. Files are told apart by inode: a
// rotation renames metrics.jsonl, which was being read, and that one is not read twice.
bool MetricsTail::open_next_file() {
  in_.close();
  in_.clear();
  current_ = folder_ + "/metrics.jsonl";
  live_ = true;
  for (const std::string& path : rotated_files(folder_)) {
    if (const uint64_t inode = inode_of(path); inode != 0 && seen_.count(inode) == 0) {
      current_ = path;
      live_ = false;
      break;
    }
  }
  in_.open(current_);
  inode_ = in_ ? inode_of(current_) : 0;
  if (inode_ != 0) seen_.insert(inode_);
  return static_cast<bool>(in_);
}

std::vector<MetricPoint> MetricsTail::next(size_t limit, int64_t timestamp_ms) {
  std::vector<MetricPoint> points;
  at_end_ = false;
  while (points.size() < limit) {
    if (!in_.is_open() && !open_next_file()) {
      if (!live_) continue;  // a rotated file renamed in between: the next
      at_end_ = true;        // no metrics.jsonl yet
      return points;
    }
    const std::streampos start = in_.tellg();
    std::string line;
    if (std::getline(in_, line) && !in_.eof()) {  // a whole line, newline included
      if (line.empty()) continue;
      try {
        const std::vector<MetricPoint> more = metric_points(parse_json(line, current_), timestamp_ms);
        points.insert(points.end(), more.begin(), more.end());
      } catch (const Error& e) {
        log::warn("experiment tracking skips a damaged line: {}", e.what());
      }
      continue;
    }
    // At the end of this file: a partial line waits for the rest; a rotated file is done; a
    // metrics.jsonl that a new start moved away is read to its end, then the new one opened.
    in_.clear();
    in_.seekg(start);
    if (!live_) {
      in_.close();
      continue;
    }
    if (inode_of(current_) != inode_) {  // read to its end through the open file; now the new one
      in_.close();
      continue;
    }
    at_end_ = true;
    return points;
  }
  return points;
}

}  // namespace cvtrain
