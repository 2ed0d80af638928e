// The batch arithmetic of a run in one place: global = micro x accumulation x world size. The
// loader derives the missing one of the three (recipe_loader.cpp, with the errors); everything
// after asks this plan instead of dividing again.
#pragma once

#include <cstdint>

#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

struct BatchPlan {
  int64_t global = 0;
  int64_t micro = 0;
  int64_t accumulation = 1;
  int world = 1;

  // The plan a resolved train section implies: its world size is global / (micro x accumulation)
  // (1 while the triple is incomplete).
  static BatchPlan of(const TrainSpec& train) {
    BatchPlan plan{train.global_batch, train.micro_batch, train.accumulation, 1};
    const int64_t per_rank = plan.per_rank();
    if (per_rank > 0 && plan.global % per_rank == 0 && plan.global / per_rank > 1) plan.world = static_cast<int>(plan.global / per_rank);
    return plan;
  }
  // Images each rank takes per optimizer step.
  int64_t per_rank() const { return micro * accumulation; }
  // The same global batch in micro-batches of `micro_batch`, accumulation making up the rest.
  BatchPlan with_micro_batch(int64_t micro_batch) const {
    return BatchPlan{global, micro_batch, global / world / micro_batch, world};
  }
};

}  // namespace cvtrain
