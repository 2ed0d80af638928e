// Run directory preparation (see run_directory.h).
#include "cvtrain/train/run_directory.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "cvtrain/core/error.h"
#include "cvtrain/core/failure_log.h"
#include "cvtrain/core/log.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/recipe/recipe_schema.h"

namespace cvtrain {

namespace fs = std::filesystem;

RunDirectory::RunDirectory(const std::string& path, const Recipe& recipe) : path_(path) {
  std::error_code ec;
  fs::create_directories(path_, ec);
  if (ec || !fs::is_directory(path_)) throw Error(fmt::format("output '{}': cannot create the run directory ({})", path_, ec.message()));
  lock_ = std::make_unique<FolderLock>(path_, "run");
  for (const auto& entry : fs::directory_iterator(path_, ec))
    if (entry.is_regular_file(ec)) files_before_.insert(entry.path().filename().string());
  if (fs::exists(file("metrics.jsonl"))) {
    int n = 1;
    while (fs::exists(file(fmt::format("metrics.{}.jsonl", n)))) ++n;
    fs::rename(file("metrics.jsonl"), file(fmt::format("metrics.{}.jsonl", n)), ec);
    if (ec) throw Error(fmt::format("{}: cannot keep the earlier metrics ({})", file("metrics.jsonl"), ec.message()));
    // The earlier start's summary goes with its metrics: until this start ends, none says "finished".
    if (fs::exists(file("perf_summary.json"))) fs::rename(file("perf_summary.json"), file(fmt::format("perf_summary.{}.json", n)), ec);
    if (ec) throw Error(fmt::format("{}: cannot keep the earlier summary ({})", file("perf_summary.json"), ec.message()));
    earlier_metrics_ = n;
  }
  write("recipe.yaml", recipe_to_yaml(recipe));
}

std::string RunDirectory::file(const std::string& name) const { return (fs::path(path_) / name).string(); }

void RunDirectory::write(const std::string& name, const std::string& text) {
  const bool seen = std::any_of(replaced_.begin(), replaced_.end(), [&](const auto& r) { return r.first == name; });
  if (!seen) replaced_.emplace_back(name, read_text_file(file(name)));
  write_file_atomically(file(name), text);
}

RunDirectory::~RunDirectory() {
  if (kept_) return;
  try {
    leave_as_found();
  } catch (const std::exception& e) {
    log::warn("{}: could not leave the run folder as this start found it: {}", path_, e.what());
  }
}

void RunDirectory::leave_as_found() {
  std::error_code ec;
  if (earlier_metrics_ > 0) {  // first, so that the moved files are no longer among those this start added
    const auto put_back = [&](const std::string& kept, const std::string& name) {
      if (fs::exists(file(kept))) fs::rename(file(kept), file(name), ec);
      if (ec) throw Error(fmt::format("{}: cannot put the earlier start's file back as {} ({})", file(kept), name, ec.message()));
    };
    put_back(fmt::format("metrics.{}.jsonl", earlier_metrics_), "metrics.jsonl");
    put_back(fmt::format("perf_summary.{}.json", earlier_metrics_), "perf_summary.json");
  }
  std::vector<fs::path> added;
  for (const auto& entry : fs::directory_iterator(path_, ec)) {
    const std::string name = entry.path().filename().string();
    // failures.jsonl says how a start failed (the launcher writes there too); the lock is held.
    if (entry.is_regular_file(ec) && !files_before_.count(name) && name != kFailuresFile && name != kFolderLockFile)
      added.push_back(entry.path());
  }
  for (const fs::path& path : added) fs::remove(path, ec);
  for (const auto& [name, before] : replaced_)
    if (before) write_file_atomically(file(name), *before);
}

}  // namespace cvtrain
