// Run directory preparation (see run_directory.h).
#include "cvtrain/train/run_directory.h"

#include <fmt/format.h>

#include <filesystem>

#include "cvtrain/core/error.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/recipe/recipe_loader.h"

namespace cvtrain {

namespace fs = std::filesystem;

RunDirectory::RunDirectory(const std::string& path, const Recipe& recipe) : path_(path) {
  std::error_code ec;
  fs::create_directories(path_, ec);
  if (ec || !fs::is_directory(path_)) throw Error(fmt::format("output '{}': cannot create the run directory ({})", path_, ec.message()));
  lock_ = std::make_unique<FolderLock>(path_, "run");
  if (fs::exists(file("metrics.jsonl"))) {
    int n = 1;
    while (fs::exists(file(fmt::format("metrics.{}.jsonl", n)))) ++n;
    fs::rename(file("metrics.jsonl"), file(fmt::format("metrics.{}.jsonl", n)), ec);
    if (ec) throw Error(fmt::format("{}: cannot keep the earlier metrics ({})", file("metrics.jsonl"), ec.message()));
    // The earlier start's summary goes with its metrics: until this start ends, none says "finished".
    if (fs::exists(file("perf_summary.json"))) fs::rename(file("perf_summary.json"), file(fmt::format("perf_summary.{}.json", n)), ec);
    if (ec) throw Error(fmt::format("{}: cannot keep the earlier summary ({})", file("perf_summary.json"), ec.message()));
  }
  write_file_atomically(file("recipe.yaml"), recipe_to_yaml(recipe));
}

std::string RunDirectory::file(const std::string& name) const { return (fs::path(path_) / name).string(); }

}  // namespace cvtrain
