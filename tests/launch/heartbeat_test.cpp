// Progress values from a rank to the launcher's hang watch, as heartbeat.h encodes them.
#include <catch2/catch.hpp>

#include "cvtrain/launch/heartbeat.h"

using namespace cvtrain;

TEST_CASE("progress values name the step, the phase and the collective a rank is in, and grow with progress", "[launch]") {
  const int64_t step4 = 4 * kProgressPerStep;
  const auto phase = [&](Phase p) { return step4 + 16 * (1 + static_cast<int64_t>(p)); };
  CHECK(describe_progress(step4) == "after step 4");
  CHECK(describe_progress(step4 + 2) == "after step 4, waiting in all-gather");
  CHECK(describe_progress(step4 + 8) == "inside step 5");
  CHECK(describe_progress(phase(Phase::kForward)) == "inside step 5, in forward");
  CHECK(describe_progress(phase(Phase::kComm)) == "inside step 5, in comm");
  CHECK(describe_progress(phase(Phase::kComm) + static_cast<int64_t>(Collective::kAllReduce)) ==
        "inside step 5, in comm, waiting in all-reduce");
  CHECK(describe_progress(phase(Phase::kForward) + static_cast<int64_t>(Collective::kAllGather)) ==
        "inside step 5, in forward, waiting in all-gather");
  CHECK(describe_progress(phase(Phase::kOptimizer)) == "inside step 5, in optimizer");
  CHECK(describe_progress(phase(Phase::kOther) + static_cast<int64_t>(Collective::kBarrier)) == "inside step 5, in other, waiting in barrier");
  // Any phase of step 5, collective or not, is beyond step 4 done and short of step 5 done: the
  // slowest rank is the least; a rank waiting in a collective is no further than its phase's next.
  CHECK(step4 + static_cast<int64_t>(Collective::kBarrier) < step4 + 8);
  CHECK(phase(Phase::kData) > step4 + 8 + static_cast<int64_t>(Collective::kBarrier));
  CHECK(phase(Phase::kForward) + static_cast<int64_t>(Collective::kBarrier) < phase(Phase::kBackward));
  CHECK(phase(Phase::kOther) + static_cast<int64_t>(Collective::kBarrier) < 5 * kProgressPerStep);
}
