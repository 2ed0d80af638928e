// Reading a run folder back (see run_history.h).
#include "cvtrain/observe/run_history.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "cvtrain/core/error.h"
#include "cvtrain/core/text_file.h"

namespace cvtrain {

namespace fs = std::filesystem;

namespace {

void read_metrics(const fs::path& path, RunHistory& run) {
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
  read_metrics(root / "metrics.jsonl", run);
  run.summary = read_json_file(root / "perf_summary.json",
                               "perf_summary.json is not there: the run has not ended, or it ran with observe.breakdown: false", run);
  run.provenance = read_json_file(root / "provenance.json", "provenance.json is not there (runs of earlier cvtrain builds do not write it)", run);
  if (const std::optional<std::string> text = read_text_file((root / "preflight.json").string()))
    run.preflight = parse_json(*text, (root / "preflight.json").string());
  if (const std::optional<std::string> text = read_text_file((root / "best" / "best.json").string()))
    run.best = parse_json(*text, (root / "best" / "best.json").string());
  run.recipe_yaml = read_text_file((root / "recipe.yaml").string()).value_or("");
  if (run.recipe_yaml.empty()) run.notes.push_back("recipe.yaml is not there");
  return run;
}

std::vector<JsonValue> epochs_of_every_start(const std::string& folder) {
  const fs::path root(folder);
  RunHistory run;
  for (int n = 1; fs::exists(root / fmt::format("metrics.{}.jsonl", n)); ++n) read_metrics(root / fmt::format("metrics.{}.jsonl", n), run);
  if (fs::exists(root / "metrics.jsonl")) read_metrics(root / "metrics.jsonl", run);
  return run.epochs;
}

std::vector<double> column(const std::vector<JsonValue>& records, const std::string& key) {
  std::vector<double> values;
  values.reserve(records.size());
  for (const JsonValue& r : records) values.push_back(r.number(key).value_or(std::nan("")));
  return values;
}

}  // namespace cvtrain
