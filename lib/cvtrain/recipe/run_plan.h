// The run as resolved from its recipe: what each `auto` became and the numbers every part asks for
// (batch plan, precision policy, strategy, optimizer path, device, decoder, workers). Built once
// from the recipe as written, completed by the run builder from the machine, printed by `cvtrain
// check` and saved in provenance.json; nothing writes back into the Recipe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cvtrain/recipe/batch_plan.h"
#include "cvtrain/recipe/precision_policy.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/recipe/strategy_traits.h"

namespace cvtrain {

struct RunPlan {
  BatchPlan batch;  // micro-batch: auto holds global / world until the probe chooses
  PrecisionPolicy precision;
  StrategyKind strategy = StrategyKind::kSingle;                    // never auto
  OptimImplementation optimizer_path = OptimImplementation::kAuto;  // fused where train.cuda_graphs needs it
  // Settled at the job's start by the machine that runs it; empty until then.
  std::string device;              // "cpu", "cuda:0"
  std::string decoder;             // what data.decoder resolved to (the log says why)
  std::optional<int64_t> workers;  // decode threads per rank (data.workers: auto counts the job's cores)
  bool workers_automatic = false;  // data.workers: auto
  bool micro_batch_left = false;   // train.micro_batch: auto, not yet probed

  // What the recipe alone decides for a job of `world_size` ranks.
  static RunPlan of(const Recipe& recipe, int world_size);

  // data.workers as advice quotes it: "4", or "auto (4)".
  std::string workers_described() const;
  const StrategyTraits& strategy_traits() const { return cvtrain::strategy_traits(strategy); }
  // (name, value) rows in a fixed order, for `cvtrain check` and provenance.json.
  std::vector<std::pair<std::string, std::string>> rows() const;
};

// The optimizer path a recipe gets: a captured step needs the skip decided on the device, which only
// the fused kernels do, so auto under train.cuda_graphs is fused (recipe_checks.cpp refuses the rest).
OptimImplementation resolve_optimizer_path(const Recipe& recipe);

}  // namespace cvtrain
