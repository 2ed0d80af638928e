// The run's output folder: created up front (so an unwritable path fails before training), locked
// for this run alone (core/folder_lock.h), older metrics kept under a new name rather than overwritten.
#pragma once

#include <memory>
#include <string>

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

 private:
  std::string path_;
  std::unique_ptr<FolderLock> lock_;  // held for the run's life
};

}  // namespace cvtrain
