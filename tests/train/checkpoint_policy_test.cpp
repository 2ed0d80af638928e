// When checkpoints are due, and which epoch is the best.
#include <catch2/catch.hpp>

#include "cvtrain/recipe/recipe.h"
#include "cvtrain/train/checkpoint_policy.h"

using namespace cvtrain;

TEST_CASE("checkpoints fall due every N steps, when the agreed minutes elapsed, and on a stop", "[train]") {
  CheckpointSpec spec;
  spec.every_steps = 4;
  const CheckpointCadence every4(spec);
  CHECK_FALSE(every4.due(3, false, false));
  CHECK(every4.due(4, false, false));
  CHECK(every4.due(8, false, false));
  CHECK(every4.due(5, true, false));
  CHECK(every4.due(5, false, true));
  CHECK_FALSE(every4.minutes_elapsed(1e9));  // every_minutes 0: never by the clock

  const CheckpointCadence never{CheckpointSpec{}};
  for (int64_t step = 1; step < 100; ++step) CHECK_FALSE(never.due(step, false, false));
  CHECK(never.due(17, false, true));  // a stop always saves first

  spec = CheckpointSpec{};
  spec.every_minutes = 1.5;
  const CheckpointCadence timed(spec);
  CHECK_FALSE(timed.minutes_elapsed(89.9));
  CHECK(timed.minutes_elapsed(90));
}

TEST_CASE("the best epoch is the higher top-1 of the chosen weights, the earlier on a tie", "[train]") {
  BestEpoch by_weights(BestMetric::kTop1);
  CHECK(by_weights.score(0.5, 0.9) == 0.5);
  CHECK(by_weights.improves(0.1));  // anything beats nothing yet
  by_weights.take(0.5);
  CHECK_FALSE(by_weights.improves(0.5));
  CHECK_FALSE(by_weights.improves(0.4));
  CHECK(by_weights.improves(0.5001));
  BestEpoch by_average(BestMetric::kTop1Ema);
  CHECK(by_average.score(0.5, 0.7) == 0.7);
  CHECK_FALSE(by_average.score(0.5, std::nullopt));
  CHECK_FALSE(BestEpoch(BestMetric::kNone).score(0.5, 0.7));
}

TEST_CASE("train.eval_every evaluates every N-th epoch and always the run's last", "[train]") {
  CHECK(evaluation_due(1, 0, false));
  CHECK_FALSE(evaluation_due(3, 0, false));
  CHECK_FALSE(evaluation_due(3, 1, false));
  CHECK(evaluation_due(3, 2, false));  // the third epoch
  CHECK(evaluation_due(3, 4, true));   // the last, wherever it falls
}
