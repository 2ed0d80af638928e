// The run's output folder: created up front (so an unwritable path fails before training), older
// metrics kept under a new name rather than overwritten.
#pragma once

#include <string>

#include "cvtrain/core/text_file.h"  // write_file_atomically, which the run's files are written with

namespace cvtrain {

struct Recipe;

class RunDirectory {
 public:
  // Creates `path`, saves the resolved recipe, rotates an earlier metrics.jsonl to metrics.N.jsonl.
  RunDirectory(const std::string& path, const Recipe& recipe);
  std::string file(const std::string& name) const;

 private:
  std::string path_;
};

}  // namespace cvtrain
