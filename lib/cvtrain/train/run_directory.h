// The run's output folder: created up front (so an unwritable path fails before training), locked
// for this run alone (core/folder_lock.h), older metrics kept under a new name rather than
// overwritten, and left as it was by a start that never trained.
#pragma once

#include <memory>
#include <optional>
#include <set>
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
  // A start that was not kept (it failed in its set-up, or found the run finished) leaves the
  // folder as it found it: the files it added go (its metrics.jsonl, its event file), the earlier
  // start's metrics and summary and the files it rewrote (recipe.yaml, provenance.json) come back,
  // so the report and TensorBoard still show the run as it was. failures.jsonl is left alone.
  ~RunDirectory();
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;

  std::string file(const std::string& name) const;
  // Writes the folder's file `name` atomically, keeping the text it replaces until keep().
  void write(const std::string& name, const std::string& text);
  // The start trains: from here what it writes is the run's.
  void keep() { kept_ = true; }

 private:
  void leave_as_found();
  std::string path_;
  std::unique_ptr<FolderLock> lock_;  // held for the run's life
  bool kept_ = false;
  std::set<std::string> files_before_;  // the folder's top-level files when this start came
  int earlier_metrics_ = 0;             // N of the metrics.N.jsonl this start moved the earlier metrics to; 0: none
  std::vector<std::pair<std::string, std::optional<std::string>>> replaced_;  // (name, its text before; nullopt: none)
};

}  // namespace cvtrain
