// Progress values from a rank to the launcher's hang watch, as heartbeat.h encodes them.
#include <catch2/catch.hpp>

#include "cvtrain/launch/heartbeat.h"

using namespace cvtrain;

TEST_CASE("progress values name the step and the phase a rank is in, and grow with progress", "[launch]") {
  CHECK(describe_progress(16 * 4) == "after step 4");
  CHECK(describe_progress(16 * 4 + 1) == "inside step 5");
  CHECK(describe_progress(16 * 4 + 2 + static_cast<int>(Phase::kForward)) == "inside step 5, in forward");
  CHECK(describe_progress(16 * 4 + 2 + static_cast<int>(Phase::kComm)) == "inside step 5, in comm");
  CHECK(describe_progress(16 * 4 + 2 + static_cast<int>(Phase::kOptimizer)) == "inside step 5, in optimizer");
  // Any phase of step 5 is beyond step 4 done and short of step 5 done: the slowest rank is the least.
  CHECK(16 * 4 < 16 * 4 + 2 + static_cast<int>(Phase::kOptimizer));
  CHECK(16 * 4 + 2 + static_cast<int>(Phase::kOther) < 16 * 5);
}
