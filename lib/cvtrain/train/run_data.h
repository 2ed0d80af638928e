// A run's datasets: data.train and data.val opened in data.format, the validation labels matched
// to the training classes by name, data.class_names applied, and all of it checked against the
// model section and the batch before the run folder is touched.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cvtrain/data/sample_pipeline.h"  // InputTimings, BadSamples

namespace cvtrain {

class Dataset;
struct Recipe;

// The datasets of a run, checked against the model section.
struct RunData {
  std::unique_ptr<Dataset> train, val;
  std::unique_ptr<BadSamples> train_bad, val_bad;
  std::unique_ptr<InputTimings> train_timings = std::make_unique<InputTimings>();  // the training workers' read / decode time
  int64_t channels = 0;                                                            // what the model takes in
  std::vector<std::string> named_classes;  // the training classes' names where the data names them; empty for numbers
  std::vector<std::string> notes;          // what was left aside and why (data.class_names of self-naming data), one line each
};

// The recipe's datasets, opened and checked against the model and batch (recipe errors name the key).
RunData open_run_data(const Recipe& recipe);
// What the data says the recipe probably does not mean (more outputs than training classes), as
// warnings: training logs them, `cvtrain check` prints them (and RunData::notes, as notes).
std::vector<std::string> data_warnings(const RunData& data, const Recipe& recipe);
// data.val alone, checked against the model (for `cvtrain eval`); a recipe error without one.
RunData open_eval_data(const Recipe& recipe);
}  // namespace cvtrain
