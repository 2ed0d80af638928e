// `cvtrain report SWEEP`: one self-contained HTML page of a sweep folder (inline CSS and SVG, no
// script, no network): key figures, every trial's learning curve on one chart (the stopped-early
// ones dashed), the metric against each searched key, the table of trials best first, and the
// best trial's resolved recipe ready to train from. Torch-free.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cvtrain/core/json_reader.h"
#include "cvtrain/recipe/sweep_space.h"
#include "cvtrain/sweep/sweep_log.h"

namespace cvtrain {

struct SweepHistory {
  std::string folder;
  SweepSpace space;                                        // space.yaml, as the sweep recorded it
  std::vector<Trial> trials;                               // sweep.jsonl's, by index
  std::map<int64_t, std::vector<JsonValue>> epochs;        // each trial's epoch records, every start
  std::string best_trial;                                  // trial-NNNN of the best finished trial; "" when none
  std::string best_recipe_yaml;                            // its recipe.yaml
  std::vector<std::string> notes;                          // what was missing or unreadable
};

// A folder `cvtrain sweep` wrote (it holds sweep.jsonl).
bool is_sweep_folder(const std::string& folder);

// Throws Error naming the folder when it holds no sweep.jsonl or space.yaml; a trial folder that
// cannot be read becomes a note.
SweepHistory read_sweep_history(const std::string& folder);

// `generated_at`: when the page is written, shown in its footer.
std::string sweep_report_html(const SweepHistory& sweep, const std::string& generated_at);

}  // namespace cvtrain
