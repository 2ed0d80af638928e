// BatchPlan: the world size a resolved train section implies, and a new micro-batch for the same
// global batch.
#include <catch2/catch.hpp>

#include "cvtrain/recipe/batch_plan.h"

using namespace cvtrain;

TEST_CASE("a resolved train section implies its world size", "[recipe]") {
  TrainSpec train;
  train.global_batch = 1024;
  train.micro_batch = 32;
  train.accumulation = 4;
  const BatchPlan plan = BatchPlan::of(train);
  CHECK(plan.world == 8);
  CHECK(plan.per_rank() == 128);
  train.accumulation = 32;
  CHECK(BatchPlan::of(train).world == 1);
  train.micro_batch = 0;  // not resolved yet
  CHECK(BatchPlan::of(train).world == 1);
  train.micro_batch = 48;  // 1024 is no multiple of 48 x 32: no world fits, so one
  CHECK(BatchPlan::of(train).world == 1);
}

TEST_CASE("another micro-batch keeps the global batch through accumulation", "[recipe]") {
  const BatchPlan plan{4096, 512, 1, 8};
  const BatchPlan smaller = plan.with_micro_batch(128);
  CHECK(smaller.global == 4096);
  CHECK(smaller.world == 8);
  CHECK(smaller.micro == 128);
  CHECK(smaller.accumulation == 4);
  CHECK(smaller.per_rank() == plan.per_rank());
}
