// c10d over Gloo between real processes: collectives agree, and a rendezvous that cannot complete
// fails on every rank with the address and the absent ranks named.
#include <catch2/catch.hpp>
#include <sys/wait.h>

#include <cstdlib>
#include <random>

#include "temp_dir.h"

using cvtrain::testing::read_text;
using cvtrain::testing::TempDir;

namespace {

struct Run {
  int exit_code = -1;
  std::string output;
};

Run shell(const std::string& command, const TempDir& dir) {
  const int status = std::system((command + " > " + dir.file("out.log") + " 2>&1").c_str());
  return Run{WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(dir.file("out.log"))};
}

int random_port() { return 30000 + static_cast<int>(std::random_device{}() % 20000); }

}  // namespace

TEST_CASE("Gloo collectives agree across 2 and 3 ranks", "[e2e]") {
  for (int world : {2, 3}) {
    TempDir dir;
    const Run run = shell(std::string(CVTRAIN_BINARY) + " launch --nproc-per-node " + std::to_string(world) + " --master-port " +
                              std::to_string(random_port()) + " -- " + CVTRAIN_PROBE,
                          dir);
    INFO(run.output);
    CHECK(run.exit_code == 0);
    for (int r = 0; r < world; ++r)
      CHECK_THAT(run.output, Catch::Contains("collectives ok rank " + std::to_string(r) + " of " + std::to_string(world)));
  }
}

TEST_CASE("a rendezvous timeout names the address and the ranks that never arrived", "[e2e]") {
  TempDir dir;
  const std::string port = std::to_string(random_port());
  const std::string env = "MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port + " PROBE_TIMEOUT_S=2 WORLD_SIZE=4 ";
  // Ranks 0 and 2 come; 1 and 3 never do.
  const Run run = shell("(" + env + "RANK=2 " + CVTRAIN_PROBE + " & " + env + "RANK=0 " + CVTRAIN_PROBE + "; wait)", dir);
  INFO(run.output);
  CHECK_THAT(run.output, Catch::Contains("rendezvous at 127.0.0.1:" + port + " timed out after 2 s: rank(s) 1, 3 of 4 never arrived"));
  CHECK_THAT(run.output, Catch::Contains("rank 2: rendezvous at 127.0.0.1:" + port + " failed"));
}

TEST_CASE("a rank whose master never comes says where it looked", "[e2e]") {
  TempDir dir;
  const std::string port = std::to_string(random_port());
  const Run run = shell("MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port + " PROBE_TIMEOUT_S=2 WORLD_SIZE=2 RANK=1 " + CVTRAIN_PROBE, dir);
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK_THAT(run.output, Catch::Contains("rank 1 cannot reach the rendezvous at 127.0.0.1:" + port));
}
