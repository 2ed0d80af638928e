// Reading a run folder back (see run_history.h).
#include "cvtrain/observe/run_history.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <filesystem>
#include <fstream>

#include "cvtrain/core/error.h"
#include "cvtrain/core/text_file.h"

namespace cvtrain {

namespace fs = std::filesystem;

namespace {

// One start's records; `resumed_at`: the checkpoint step its "resume" record names, if any.
void read_metrics(const fs::path& path, RunHistory& run, std::optional<double>* resumed_at = nullptr) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot read the run's metrics", path.string()));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string where = fmt::format("{}:{}", path.string(), i + 1);
    JsonValue record;
    try {
      record = parse_json(lines[i], where);
    } catch (const Error&) {
      // Only the last line may be cut short: the run is still writing it, or was killed mid-line.
      if (i + 1 < lines.size()) throw;
      run.notes.push_back(fmt::format("{}: incomplete last line left out (the run may still be writing)", where));
      continue;
    }
    const std::string kind = record.text("kind");
    if (kind == "train") run.intervals.push_back(std::move(record));
    else if (kind == "epoch") run.epochs.push_back(std::move(record));
    else if (kind == "resume" && resumed_at) *resumed_at = record.number("step");
  }
}

// A record's step (-1 when it has none).
double step_of(const JsonValue& record) { return record.number("step").value_or(-1); }

// Every start's records, oldest first: metrics.1.jsonl, metrics.2.jsonl, ..., metrics.jsonl. A start
// that resumed from a checkpoint logs again what the start before it had logged after that
// checkpoint, so those earlier records are left out: after the step its "resume" record names, or,
// in files of cvtrain builds that wrote none, from its first logged step on (logging falls on
// multiples of train.log_every and on epoch ends); a fresh start leaves out all before it.
void read_every_start(const fs::path& root, RunHistory& run) {
  std::vector<fs::path> starts;
  for (int n = 1; fs::exists(root / fmt::format("metrics.{}.jsonl", n)); ++n) starts.push_back(root / fmt::format("metrics.{}.jsonl", n));
  if (fs::exists(root / "metrics.jsonl")) starts.push_back(root / "metrics.jsonl");
  for (const fs::path& file : starts) {
    RunHistory start;
    std::optional<double> resumed_at;
    read_metrics(file, start, &resumed_at);
    run.notes.insert(run.notes.end(), start.notes.begin(), start.notes.end());
    double first_step = std::numeric_limits<double>::infinity();
    for (const auto* records : {&start.intervals, &start.epochs})
      for (const JsonValue& r : *records) first_step = std::min(first_step, step_of(r));
    if (resumed_at) first_step = *resumed_at + 1;
    const auto logged_again = [&](const JsonValue& r) { return step_of(r) >= first_step; };
    run.intervals.erase(std::remove_if(run.intervals.begin(), run.intervals.end(), logged_again), run.intervals.end());
    run.epochs.erase(std::remove_if(run.epochs.begin(), run.epochs.end(), logged_again), run.epochs.end());
    for (auto& r : start.intervals) run.intervals.push_back(std::move(r));
    for (auto& r : start.epochs) run.epochs.push_back(std::move(r));
  }
}

JsonValue read_json_file(const fs::path& path, const std::string& missing_note, RunHistory& run) {
  const std::optional<std::string> text = read_text_file(path.string());
  if (!text) {
    run.notes.push_back(missing_note);
    return JsonValue();
  }
  return parse_json(*text, path.string());
}

}  // namespace

RunHistory read_run_history(const std::string& folder) {
  const fs::path root(folder);
  if (fs::is_regular_file(root)) throw Error(fmt::format("{}: is a file; give a run folder (the recipe's `output`)", folder));
  if (!fs::is_directory(root)) throw Error(fmt::format("{}: no such run folder", folder));
  if (!fs::exists(root / "metrics.jsonl"))
    throw Error(fmt::format("{}: not a run folder (no metrics.jsonl; give the recipe's `output` folder)", folder));
  RunHistory run;
  run.folder = folder;
  read_every_start(root, run);
  run.summary = read_json_file(root / "perf_summary.json",
                               "perf_summary.json is not there: the run has not ended (or it failed), or it ran with observe.breakdown: false", run);
  run.provenance = read_json_file(root / "provenance.json", "provenance.json is not there (runs of earlier cvtrain builds do not write it)", run);
  if (const std::optional<std::string> text = read_text_file((root / "preflight.json").string()))
    run.preflight = parse_json(*text, (root / "preflight.json").string());
  if (const std::optional<std::string> text = read_text_file((root / "best" / "best.json").string()))
    run.best = parse_json(*text, (root / "best" / "best.json").string());
  if (const std::optional<std::string> text = read_text_file((root / "eval.json").string()))
    run.eval = parse_json(*text, (root / "eval.json").string());
  run.failures = read_failures(folder);
  run.recipe_yaml = read_text_file((root / "recipe.yaml").string()).value_or("");
  if (run.recipe_yaml.empty()) run.notes.push_back("recipe.yaml is not there");
  return run;
}

std::vector<FailureRecord> failures_of_latest_start(const RunHistory& run) {
  const std::string started = run.provenance.text("started_at");
  std::vector<FailureRecord> latest;
  for (const FailureRecord& f : run.failures)
    if (f.time >= started) latest.push_back(f);
  return latest;
}

std::vector<JsonValue> epochs_of_every_start(const std::string& folder) {
  const fs::path root(folder);
  RunHistory run;
  read_every_start(root, run);
  return run.epochs;
}

std::vector<double> column(const std::vector<JsonValue>& records, const std::string& key) {
  std::vector<double> values;
  values.reserve(records.size());
  for (const JsonValue& r : records) values.push_back(r.number(key).value_or(std::nan("")));
  return values;
}

}  // namespace cvtrain
