// The training loop: the only place that sees the whole Recipe and joins data, model, optimizer,
// schedule and metrics.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace cvtrain {

struct PreflightParts;
struct Recipe;
struct RankInfo;

struct TrainSummary {
  int64_t steps = 0;
  double train_loss = 0;  // mean over the last epoch
  std::vector<std::pair<std::string, double>> scores;  // the last evaluation's (evaluator.h); empty: no validation data
  double seconds = 0;
};

// Trains as the recipe says, as `rank` of its job (a default RankInfo: the only process). Rank 0
// writes recipe.yaml, metrics.jsonl and model.pt into recipe.output. `before_strategy` sees the
// built model before the strategy takes it over (cvtrain's `preflight: true` probes it there).
TrainSummary train(const Recipe& recipe, const RankInfo& rank, const std::function<void(PreflightParts&)>& before_strategy = {});

}  // namespace cvtrain
