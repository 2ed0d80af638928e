// The run's output folder: created up front (so an unwritable path fails before training), locked
// for this run alone (core/folder_lock.h), older metrics kept under a new name rather than overwritten.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cvtrain/core/folder_lock.h"

#include "cvtrain/core/text_file.h"  // write_file_atomically, which the run's files are written with

namespace cvtrain {

struct Recipe;

class RunDirectory {
 public:
  // Creates and locks `path` (Error when another run holds it), saves the resolved recipe, rotates
  // an earlier metrics.jsonl to metrics.N.jsonl.
  RunDirectory(const std::string& path, const Recipe& recipe);
  std::string file(const std::string& name) const;
  // Writes the folder's file `name` atomically, keeping the text it replaces for leave_as_found().
  void write(const std::string& name, const std::string& text);
  // For a start that found the run already finished and trained nothing: the earlier start's
  // metrics and summary, and the files this start rewrote (recipe.yaml, provenance.json), go back
  // as they were, so the report and TensorBoard still show the finished run. The caller discards
  // this start's metrics.jsonl first (MetricsLog::discard).
  void leave_as_found();

 private:
  std::string path_;
  std::unique_ptr<FolderLock> lock_;  // held for the run's life
  int earlier_metrics_ = 0;           // N of the metrics.N.jsonl this start moved the earlier metrics to; 0: none
  std::vector<std::pair<std::string, std::optional<std::string>>> replaced_;  // (name, its text before; nullopt: none)
};

}  // namespace cvtrain
