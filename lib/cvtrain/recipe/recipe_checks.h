// The recipe's rules that involve more than one key: the batch triple, data and paths, optimizer
// against strategy, data.decoder, schedule against lr, strategy: auto. load_recipe runs them once
// every key has been read.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cvtrain/recipe/recipe_loader.h"

namespace cvtrain {

// Where a rule reports a problem with a key; the loader adds the file:line that set the key.
using KeyFailure = std::function<void(const std::string& key, const std::string& message)>;

// Resolves what the keys leave derived (the batch triple, strategy: auto, the optimizer
// implementation train.cuda_graphs needs) and reports every combination that cannot run.
void cross_check(Recipe& recipe, const LoadOptions& options, const KeyFailure& fail);

// lamb and lars: the trust ratio needs each parameter whole and is decided on the host.
bool uses_trust_ratio(OptimizerKind name);

// What a recipe allows but probably does not mean: a warmup as long as the run, a milestone past
// its end. Warnings, not errors: a short smoke run of a long recipe (train.epochs=1) is legitimate.
std::vector<std::string> recipe_warnings(const Recipe& recipe);

// What only the machine that runs the job can settle (its GPUs, their count, nvJPEG, NCCL, its
// cores): what `check --no-paths` on a login node leaves for the job's start, one line each.
std::vector<std::string> checks_left_for_the_job(const Recipe& recipe);

}  // namespace cvtrain
