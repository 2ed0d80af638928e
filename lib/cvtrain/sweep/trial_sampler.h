// Which recipe values each trial of a sweep gets: the whole grid, seeded random draws (trial i is a
// pure function of the seed and i, so a restarted sweep draws the same), or the tree-structured
// Parzen estimator (Optuna's default): after a few random trials, each key's value is the candidate
// that best separates the better quarter of the scored trials from the rest.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cvtrain/recipe/sweep_space.h"

namespace cvtrain {

// Recipe key and its value as YAML text, in the space's order: the trial's overrides.
using Assignment = std::vector<std::pair<std::string, std::string>>;

// A finished or pruned trial as the model-based sampler sees it: higher score is better (the metric,
// negated when it is minimised); nullopt for one that failed or reported nothing. `progress`: how
// far it went (early-stopping rungs reached). As Optuna's TPE does with pruned trials, one that went
// further ranks above one stopped earlier whatever their scores: an early rung's metric is not
// comparable with a finished trial's.
struct ScoredTrial {
  Assignment assignment;
  std::optional<double> score;
  int64_t progress = 0;
};

// Every combination of the choices, the first key varying slowest.
std::vector<Assignment> grid_assignments(const SweepSpace& space);
// How many different assignments the space holds when every key is a list or an int range;
// nullopt with a continuous key (or more than can be counted).
std::optional<uint64_t> distinct_assignments(const SweepSpace& space);
Assignment random_assignment(const SweepSpace& space, int64_t index);
// The first `count` different seeded random draws, fewer where the space holds fewer: a trial with
// the values of another repeats it bit for bit. Trial i's values stay a pure function of the seed and i.
std::vector<Assignment> random_assignments(const SweepSpace& space, int64_t count);
// Random for the first kTpeStartupTrials scored trials, then TPE over `finished` (pruned ones included).
inline constexpr size_t kTpeStartupTrials = 5;
Assignment tpe_assignment(const SweepSpace& space, int64_t index, const std::vector<ScoredTrial>& finished, uint64_t attempt = 0);
// tpe_assignment, drawn again while a trial in `taken` has its values; after a few tries the first
// random draw no trial has. nullopt when the space holds no other assignment.
std::optional<Assignment> untaken_tpe_assignment(const SweepSpace& space, int64_t index, const std::vector<ScoredTrial>& finished,
                                                 const std::vector<Assignment>& taken);

// "optim.lr=0.01 augment.mixup=0.2": as a trial's command line gets them.
std::vector<std::string> overrides_of(const Assignment& assignment);

}  // namespace cvtrain
