// The CPU budget: data.workers: auto's share of a rank's cores, and the usable-CPU count it starts from.
#include <catch2/catch.hpp>

#include <thread>

#include "cvtrain/core/cpu_budget.h"

using namespace cvtrain;

TEST_CASE("data.workers auto leaves a GPU rank's training thread one core and a CPU rank half its cores", "[core]") {
  CHECK(automatic_workers(16, true, 32) == 15);  // one H200 on a 16-core host
  CHECK(automatic_workers(16, false, 32) == 8);
  CHECK(automatic_workers(1, true, 32) == 1);  // never none: 0 would decode on the training thread
  CHECK(automatic_workers(1, false, 32) == 1);
  CHECK(automatic_workers(2, false, 32) == 1);    // this project's 2-core CI machine
  CHECK(automatic_workers(128, true, 32) == 32);  // a whole big node for one rank: capped
}

TEST_CASE("usable CPUs are at least one and no more than the machine has", "[core]") {
  const unsigned usable = usable_cpus();
  CHECK(usable >= 1);
  const unsigned machine = std::thread::hardware_concurrency();
  if (machine > 0) CHECK(usable <= machine);
}
