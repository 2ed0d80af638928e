// The training loop: the only place that sees the whole Recipe and joins data, model, optimizer,
// schedule and metrics.
#pragma once

#include <cstdint>

namespace cvtrain {

struct Recipe;
struct RankInfo;

struct TrainSummary {
  int64_t steps = 0;
  double train_loss = 0;  // mean over the last epoch
  double top1 = -1;       // -1: no validation data
  double top5 = -1;
  double seconds = 0;
};

// Trains as the recipe says, as `rank` of its job (a default RankInfo: the only process). Rank 0
// writes recipe.yaml, metrics.jsonl and model.pt into recipe.output.
TrainSummary train(const Recipe& recipe, const RankInfo& rank);

}  // namespace cvtrain
