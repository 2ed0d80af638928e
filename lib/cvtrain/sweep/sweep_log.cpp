// sweep.jsonl: one JSON object per line, appended and flushed per event (see sweep_log.h).
#include "cvtrain/sweep/sweep_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "cvtrain/core/error.h"
#include "cvtrain/core/json_reader.h"
#include "cvtrain/core/text.h"
#include "cvtrain/observe/provenance.h"

namespace cvtrain {
namespace {

std::string values_json(const Assignment& values) {
  std::vector<std::string> members;
  for (const auto& [key, value] : values) members.push_back(json_string(key) + ": " + json_string(value));
  return "{" + join(members, ", ") + "}";
}

std::string number_or_null(std::optional<double> value) {
  return value && std::isfinite(*value) ? fmt::format("{:.10g}", *value) : "null";
}

TrialStatus status_named(const std::string& name) {
  return name == "done"            ? TrialStatus::kDone
         : name == "failed"        ? TrialStatus::kFailed
         : name == "stopped early" ? TrialStatus::kStoppedEarly
                                   : TrialStatus::kStopped;
}

}  // namespace

const char* status_name(TrialStatus s) {
  switch (s) {
    case TrialStatus::kPending: return "pending";
    case TrialStatus::kRunning: return "running";
    case TrialStatus::kDone: return "done";
    case TrialStatus::kFailed: return "failed";
    case TrialStatus::kStopped: return "stopped";
    case TrialStatus::kPaused: return "paused";
    case TrialStatus::kStoppedEarly: return "stopped early";
  }
  return "?";
}

std::string trial_name(int64_t index) { return fmt::format("trial-{:04d}", index); }

std::vector<const Trial*> best_first(const std::vector<Trial>& trials, bool maximize) {
  std::vector<const Trial*> order;
  for (const Trial& t : trials) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [&](const Trial* a, const Trial* b) {
    if (a->metric.has_value() != b->metric.has_value()) return a->metric.has_value();
    if (!a->metric) return false;
    if (a->rungs.size() != b->rungs.size()) return a->rungs.size() > b->rungs.size();
    return maximize ? *a->metric > *b->metric : *a->metric < *b->metric;
  });
  return order;
}

void SweepLog::started(const Trial& t) const {
  append(fmt::format("{{\"event\": \"start\", \"trial\": {}, \"values\": {}, \"launcher\": {}, \"time\": {}}}", t.index,
                     values_json(t.values), json_string(t.launcher.empty() ? "local" : t.launcher), json_string(utc_now())));
}

void SweepLog::ended(const Trial& t) const {
  append(fmt::format("{{\"event\": \"end\", \"trial\": {}, \"status\": {}, \"exit_code\": {}, \"metric\": {}, \"seconds\": {:.1f}, "
                     "\"message\": {}, \"time\": {}}}",
                     t.index, json_string(status_name(t.status)), t.exit_code, number_or_null(t.metric), t.seconds,
                     json_string(t.message), json_string(utc_now())));
}

void SweepLog::rung(const Trial& t, int64_t epoch) const {
  append(fmt::format("{{\"event\": \"rung\", \"trial\": {}, \"rung\": {}, \"epoch\": {}, \"metric\": {}, \"time\": {}}}", t.index,
                     t.rungs.size() - 1, epoch, number_or_null(t.rungs.back()), json_string(utc_now())));
}

std::map<int64_t, Trial> SweepLog::read() const {
  std::map<int64_t, Trial> trials;
  std::ifstream in(path_);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    JsonValue record;
    try {
      record = parse_json(line, fmt::format("{}:{}", path_, number));
    } catch (const Error&) {
      if (in.peek() == EOF) break;  // a line cut by a kill: the trial simply runs again
      throw;
    }
    const auto index = static_cast<int64_t>(record.number("trial").value_or(-1));
    Trial& t = trials[index];
    t.index = index;
    const std::string event = record.text("event");
    if (event == "start") {
      t.values.clear();
      for (const auto& [key, value] : record["values"].object()) t.values.emplace_back(key, value.string().value_or(""));
      t.logged_start = true;
      t.launcher = record.text("launcher");
      t.status = TrialStatus::kPending;
    } else if (event == "rung") {
      t.rungs.push_back(record.number("metric").value_or(std::nan("")));
      t.metric = record.number("metric");
      t.status = TrialStatus::kPaused;
    } else {
      t.status = status_named(record.text("status"));
      t.exit_code = static_cast<int>(record.number("exit_code").value_or(0));
      t.metric = record.number("metric");
      t.message = record.text("message");
      t.seconds = record.number("seconds").value_or(0);
    }
  }
  return trials;
}

void SweepLog::append(const std::string& line) const {
  std::ofstream out(path_, std::ios::app);
  out << line << "\n";
  if (!out) throw Error(fmt::format("{}: cannot append to the sweep's log", path_));
}

}  // namespace cvtrain
