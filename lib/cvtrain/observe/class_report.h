// The run report's per-class section, from the eval.json that `cvtrain eval` writes into the run
// folder: the classes with the lowest top-1 (as bars) and the most frequent confusions. Torch-free.
#pragma once

#include <string>

#include "cvtrain/core/json_reader.h"

namespace cvtrain {

// "" when `eval` (eval.json) is null or holds no per-class figures (an older cvtrain's).
std::string class_accuracy_section(const JsonValue& eval);

}  // namespace cvtrain
