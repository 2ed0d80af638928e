// The batch arithmetic of a run in one place: global = micro x accumulation x world size. The
// loader derives the missing one of the three (recipe_loader.cpp, with the errors); everything
// after asks this plan instead of dividing again.
#pragma once

#include <algorithm>
#include <cstddef>
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

// A run's length in optimizer steps: an epoch is the whole global batches the training set holds
// (a last partial one is left out, as DataLoader's drop_last), the run train.epochs of them, capped
// by train.max_steps. The schedule spans `total_steps`.
struct RunLength {
  int64_t steps_per_epoch = 0;
  int64_t total_steps = 0;
  static RunLength of(size_t train_samples, const TrainSpec& train) {
    RunLength length;
    length.steps_per_epoch = static_cast<int64_t>(train_samples) / train.global_batch;
    length.total_steps = train.epochs * length.steps_per_epoch;
    if (train.max_steps > 0) length.total_steps = std::min(length.total_steps, train.max_steps);
    return length;
  }
};

}  // namespace cvtrain
