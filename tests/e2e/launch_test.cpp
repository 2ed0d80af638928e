// `cvtrain launch` end to end with shell ranks: prefixed output, failure propagation within
// seconds naming the rank, SIGKILL after the grace period, signal forwarding, nothing left behind.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <random>

#include "run_shell.h"

using cvtrain::testing::Run;
using cvtrain::testing::shell;
using cvtrain::testing::TempDir;

namespace {


// A marker unique to this test run, so leftover processes can be counted with pgrep.
std::string marker() { return "cvtrain_marker_" + std::to_string(std::random_device{}()); }

int leftovers(const std::string& mark) {
  TempDir dir;
  return std::atoi(shell("pgrep -fc " + mark + " | tr -d '\\n'", dir).output.c_str());
}

}  // namespace

TEST_CASE("launch gives each rank torchrun's variables and prefixes its output", "[e2e]") {
  TempDir dir;
  const Run run = shell("$CVTRAIN launch --nproc-per-node 3 --master-port 31234 -- "
                        "sh -c 'echo \"$RANK/$WORLD_SIZE local $LOCAL_RANK/$LOCAL_WORLD_SIZE at $MASTER_ADDR:$MASTER_PORT\"'\n",
                        dir);
  INFO(run.output);
  CHECK(run.exit_code == 0);
  for (int r = 0; r < 3; ++r)
    CHECK_THAT(run.output, Catch::Contains("[rank " + std::to_string(r) + "] " + std::to_string(r) + "/3 local " +
                                           std::to_string(r) + "/3 at 127.0.0.1:31234"));
}

TEST_CASE("a rank failing at step 3 stops the job quickly, named, with nothing left", "[e2e][ranks]") {
  TempDir dir;
  const std::string mark = marker();
  // Rank 1 fails after three steps; rank 0 ignores SIGTERM and must be killed after the grace period.
  // Unkilled, rank 0 would sleep a minute at the end: timeout(1) would end it with 137.
  const Run run = shell("timeout -s KILL 40 $CVTRAIN launch --nproc-per-node 3 --grace-s 2 -- bash -c '"
                        "trap \"\" TERM; [ $RANK = 2 ] && trap \"exit 0\" TERM; "
                        "for step in 1 2 3 4 5 6 7 8 9 10; do "
                        "  if [ $RANK = 1 ] && [ $step = 3 ]; then echo failing at step $step; exit 1; fi; "
                        "  sleep 0.2; "
                        "done; sleep 60 # " + mark + "' " + mark + "\n",
                        dir);
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK_THAT(run.output, Catch::Contains("[rank 1] failing at step 3") && Catch::Contains("rank 1 exited with code 1"));
  CHECK(leftovers(mark) == 0);
}

TEST_CASE("a rank killed by a signal is reported as such", "[e2e][ranks]") {
  TempDir dir;
  const Run run = shell("$CVTRAIN launch --nproc-per-node 2 -- sh -c '[ $RANK = 0 ] && kill -9 $$; sleep 30'\n", dir);
  INFO(run.output);
  CHECK(run.exit_code == 128 + 9);
  CHECK_THAT(run.output, Catch::Contains("rank 0 was killed by signal 9"));
}

TEST_CASE("SIGTERM to the launcher reaches every rank", "[e2e][ranks]") {
  TempDir dir;
  // The signal goes out once both ranks said they are ready (a loaded machine can take seconds to
  // start the launcher, and a signal before its handlers exist would simply kill it).
  const Run run = shell("$CVTRAIN launch --nproc-per-node 2 -- bash -c '"
                        "trap \"echo got TERM; exit 0\" TERM; echo ready; for i in $(seq 300); do sleep 0.1; done' > " +
                            dir.file("launcher.log") + " 2>&1 &\n"
                            "pid=$!\n"
                            "for i in $(seq 300); do [ \"$(grep -c ready " + dir.file("launcher.log") +
                            ")\" = 2 ] && break; sleep 0.1; done\n"
                            "kill -TERM $pid\n"
                            "wait $pid\n"
                            "echo launcher exit $?\n"
                            "cat " + dir.file("launcher.log") + "\n",
                        dir);
  INFO(run.output);
  CHECK_THAT(run.output, Catch::Contains("[rank 0] got TERM") && Catch::Contains("[rank 1] got TERM") &&
                             Catch::Contains("launcher exit 0"));  // "got TERM" only comes from the signal
}

TEST_CASE("a program that cannot be started fails the job", "[e2e]") {
  TempDir dir;
  const Run run = shell("$CVTRAIN launch --nproc-per-node 2 -- /no/such/program\n", dir);
  INFO(run.output);
  CHECK(run.exit_code == 127);
  CHECK_THAT(run.output, Catch::Contains("cannot execute /no/such/program"));
}
