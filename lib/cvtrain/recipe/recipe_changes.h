// What a resumed run changed against the recipe its checkpoint was saved with, key by key: the
// run continues with the new values, so a resume that is no exact continuation says so.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace cvtrain {

struct KeyChange {
  std::string key, before, after;  // before/after "(unset)" where one recipe lacks the key
};

// The keys whose values differ between two resolved recipes (recipe_to_yaml's text), in key order,
// leaving out those that only say how the run is operated (output, checkpointing, logging,
// profiling, workers, process layout, timeouts), which a resume may change freely.
std::vector<KeyChange> recipe_changes(const std::string& saved_yaml, const std::string& current_yaml);

// "optim.lr 0.1 -> 0.05, data.max_samples 2000 -> 3000", the first `at_most` and how many more.
std::string describe_changes(const std::vector<KeyChange>& changes, size_t at_most = 12);

}  // namespace cvtrain
