// train.max_bad_steps: which steps are skipped, which count, when the run stops.
#include <catch2/catch.hpp>

#include "cvtrain/train/bad_step_policy.h"

using namespace cvtrain;
using StepVerdict = BadStepPolicy::Verdict;

TEST_CASE("bad steps in a row stop the run at max_bad_steps, and a clean step starts the count over", "[train]") {
  BadStepPolicy policy(3);
  CHECK(policy.judge(true, true, false) == StepVerdict::kSkipped);
  CHECK(policy.judge(true, false, false) == StepVerdict::kSkipped);  // gradients only, without loss scaling: bad too
  CHECK(policy.in_row() == 2);
  CHECK(policy.judge(false, false, false) == StepVerdict::kClean);
  CHECK(policy.in_row() == 0);
  CHECK(policy.judge(true, true, false) == StepVerdict::kSkipped);
  CHECK(policy.judge(true, true, false) == StepVerdict::kSkipped);
  CHECK(policy.judge(true, true, false) == StepVerdict::kGiveUp);
  CHECK(policy.in_row() == 3);
}

TEST_CASE("fp16 gradient overflows at a finite loss are skipped without counting as bad steps", "[train]") {
  BadStepPolicy policy(2);
  CHECK(policy.judge(true, true, true) == StepVerdict::kSkipped);  // a non-finite loss is bad even under loss scaling
  for (int i = 0; i < 10; ++i) CHECK(policy.judge(true, false, true) == StepVerdict::kOverflow);
  CHECK(policy.in_row() == 1);  // overflows neither reset nor extend the run
  CHECK(policy.judge(true, true, true) == StepVerdict::kGiveUp);
}

TEST_CASE("the stop message names the limit, the step and the last good checkpoint", "[train]") {
  BadStepPolicy policy(1);
  REQUIRE(policy.judge(true, true, false) == StepVerdict::kGiveUp);
  const std::string none = policy.give_up_message(7, "");
  CHECK_THAT(none, Catch::Contains("1 steps in a row") && Catch::Contains("train.max_bad_steps 1") && Catch::Contains("at step 7") &&
                       Catch::Contains("No checkpoint was saved yet"));
  CHECK_THAT(policy.give_up_message(7, "runs/x/checkpoints/step-00000005"),
             Catch::Contains("Last good checkpoint: runs/x/checkpoints/step-00000005"));
}
