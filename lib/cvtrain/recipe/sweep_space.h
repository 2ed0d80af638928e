// A sweep's search space (`cvtrain sweep --space S.yaml`, or a recipe's `sweep:` section): which recipe keys to search and
// how (choice lists, grids, uniform, loguniform, integer ranges), the metric and its direction,
// the sampler, the trial budget and how many run at once. Torch-free; yaml-cpp stays in recipe/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cvtrain {

struct SearchDimension {
  enum class Kind { kChoice, kUniform, kLogUniform, kInt };
  std::string key;                   // a recipe key, dotted ("optim.lr")
  Kind kind = Kind::kChoice;
  std::vector<std::string> choices;  // kChoice: YAML values as written ("0.1", "resnet18", "[0.9, 0.95]")
  double low = 0, high = 0;          // the ranges, both ends included
};

enum class SweepSampler { kGrid, kRandom, kTpe };
const char* sampler_name(SweepSampler sampler);  // as the space file spells it: grid, random, tpe

struct SweepSpace {
  std::string file;                      // for messages: the space file, or the recipe holding `sweep:`
  std::string text;                      // the space as flow YAML: a restarted sweep checks it is unchanged
  std::vector<SearchDimension> dimensions;
  std::string metric = "top1";           // a field of metrics.jsonl's epoch records
  bool maximize = true;                  // mode: max | min (default: min for a metric named *loss*)
  SweepSampler sampler = SweepSampler::kRandom;
  int64_t trials = 8;                    // grid: 0 = the whole grid
  int64_t parallel = 1;                  // trials at once
  uint64_t seed = 0;
  int64_t gpus_per_trial = 1;            // on a GPU machine; on CPUs the cores are split among the parallel trials
  // early_stopping: {grace: G, reduction: R}: asynchronous successive halving (ASHA, as Ray Tune's)
  // with rungs after epochs G, G*R, G*R^2, ... below train.epochs; at each rung only the best 1/R of
  // the trials that reached it go on. grace 0: off.
  int64_t grace_epochs = 0;
  int64_t reduction = 3;
};

// `sweep.KEY=VALUE` overrides (`cvtrain sweep ... sweep.trials=4 sweep.space.optim.lr=[0.1,0.2]`):
// set into the space before it is read and checked, as recipe overrides are; a problem with one
// names the override.
constexpr const char* kSweepOverridePrefix = "sweep.";
bool is_sweep_override(const std::string& text);

// Reads and checks the file: every key a recipe key (`known_keys`), every range non-empty and in
// order (loguniform above 0), grid only over choices. Throws RecipeError listing every problem with
// file:line and key.
SweepSpace load_sweep_space(const std::string& path, const std::vector<std::string>& known_keys,
                            const std::vector<std::string>& overrides = {});

// The same from the `sweep:` section of a recipe file (whose training ignores that section); lines
// in messages are the recipe's. Throws RecipeError naming the file when it has no such section.
SweepSpace load_recipe_sweep_section(const std::string& recipe_path, const std::vector<std::string>& known_keys,
                                     const std::vector<std::string>& overrides = {});
// The same, nullopt when the recipe has no sweep: section (what `cvtrain check` looks at).
std::optional<SweepSpace> recipe_sweep_section(const std::string& recipe_path, const std::vector<std::string>& known_keys,
                                               const std::vector<std::string>& overrides = {});

// "random over optim.lr, augment.mixup, 12 trials, 2 at a time, top1 (max), ASHA from epoch 1 by 2".
std::string describe_space(const SweepSpace& space);

}  // namespace cvtrain
