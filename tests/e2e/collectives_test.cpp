// c10d over Gloo between real processes: collectives agree, and a rendezvous that cannot complete
// fails on every rank with the address and the absent ranks named.
#include <catch2/catch.hpp>

#include "run_shell.h"

using cvtrain::testing::random_port;
using cvtrain::testing::shell;
using cvtrain::testing::TempDir;

namespace {


}  // namespace

TEST_CASE("Gloo collectives agree across 2 and 3 ranks", "[e2e][ranks]") {
  for (int world : {2, 3}) {
    TempDir dir;
    const auto run = shell(std::string(CVTRAIN_BINARY) + " launch --nproc-per-node " + std::to_string(world) + " --master-port " +
                              random_port() + " -- " + CVTRAIN_PROBE,
                          dir);
    INFO(run.output);
    CHECK(run.exit_code == 0);
    for (int r = 0; r < world; ++r)
      CHECK_THAT(run.output, Catch::Contains("collectives ok rank " + std::to_string(r) + " of " + std::to_string(world)));
  }
}

TEST_CASE("a rendezvous timeout names the address and the ranks that never arrived", "[e2e]") {
  TempDir dir;
  const std::string port = random_port();
  const std::string env = "MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port + " PROBE_TIMEOUT_S=2 WORLD_SIZE=4 ";
  // Ranks 0 and 2 come; 1 and 3 never do.
  const auto run = shell("(" + env + "RANK=2 " + CVTRAIN_PROBE + " & " + env + "RANK=0 " + CVTRAIN_PROBE + "; wait)", dir);
  INFO(run.output);
  CHECK_THAT(run.output, Catch::Contains("rendezvous at 127.0.0.1:" + port + " timed out after 2 s: rank(s) 1, 3 of 4 never arrived"));
  CHECK_THAT(run.output, Catch::Contains("rank 2: rendezvous at 127.0.0.1:" + port + " failed"));
}

TEST_CASE("a rank whose master never comes says where it looked", "[e2e]") {
  TempDir dir;
  const std::string port = random_port();
  const auto run = shell("MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port + " PROBE_TIMEOUT_S=2 WORLD_SIZE=2 RANK=1 " + CVTRAIN_PROBE, dir);
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK_THAT(run.output, Catch::Contains("rank 1 cannot reach the rendezvous at 127.0.0.1:" + port));
}
