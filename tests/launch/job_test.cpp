// The launcher's policy: the plan a recipe gives, the rank of a process, which exit codes end a
// job, and group restarts (real processes, counted through the attempt number they are given).
#include <catch2/catch.hpp>

#include "cvtrain/core/error.h"
#include "cvtrain/launch/job.h"
#include "cvtrain/recipe/recipe.h"
#include "temp_dir.h"

using namespace cvtrain;
using cvtrain::testing::read_text;
using cvtrain::testing::TempDir;

TEST_CASE("a recipe's distributed section gives this node's launch plan", "[launch]") {
  DistributedSpec spec;
  spec.nnodes = 2;
  spec.node_rank = 1;
  spec.master_addr = "head";
  LaunchPlan plan = launch_plan_of(spec, 8);
  CHECK(plan.nproc_per_node == 4);
  CHECK(plan.nnodes == 2);
  CHECK(plan.node_rank == 1);
  CHECK(plan.master_addr == "head");
  CHECK(plan.master_port == 29500);  // master_port 0
  spec.master_port = 1234;
  CHECK(launch_plan_of(spec, 8).master_port == 1234);
}

TEST_CASE("a process is the environment's rank, or the only rank of its job", "[launch]") {
  DistributedSpec spec;
  spec.master_addr = "10.0.0.1";
  const RankInfo alone = rank_of_process(std::nullopt, spec);
  CHECK(alone.rank == 0);
  CHECK(alone.world_size == 1);
  CHECK(alone.master_addr == "10.0.0.1");
  CHECK(alone.master_port == 29500);

  RankInfo slurm;
  slurm.rank = 3;
  slurm.world_size = 8;
  slurm.source = "slurm";
  slurm.master_port = 23456;  // 20000 + job id % 20000
  CHECK(rank_of_process(slurm, spec).master_port == 23456);
  spec.master_port = 4000;
  CHECK(rank_of_process(slurm, spec).master_port == 4000);  // the recipe's port wins over Slurm's derived one
  RankInfo torchrun = slurm;
  torchrun.source = "torchrun";
  torchrun.master_port = 29400;
  CHECK(rank_of_process(torchrun, spec).master_port == 29400);  // torchrun's MASTER_PORT is the store's
  CHECK(rank_of_process(torchrun, spec).rank == 3);
}

TEST_CASE("success, a requested stop and a recipe error end a job, while crashes and hangs may be retried", "[launch]") {
  CHECK(ends_job(0));
  CHECK(ends_job(kExitPreempted));
  CHECK(ends_job(kExitRecipeError));
  CHECK_FALSE(ends_job(kExitRuntimeError));
  CHECK_FALSE(ends_job(kExitHang));
  CHECK_FALSE(ends_job(128 + 9));
}

TEST_CASE("a failing group is restarted up to max_restarts times, a final code is not", "[launch]") {
  TempDir dir;
  LaunchPlan plan;
  plan.master_port = 1;  // no rendezvous happens: the ranks are shell commands
  const std::string log = dir.file("attempts");
  const auto ranks_exiting = [&](int code) {
    return std::vector<std::string>{"sh", "-c", "echo $TORCHELASTIC_RESTART_COUNT >> " + log + "; exit " + std::to_string(code)};
  };
  CHECK(run_with_restarts(plan, ranks_exiting(3), {}, 2) == 3);
  CHECK(read_text(log) == "0\n1\n2\n");
  std::filesystem::remove(log);
  CHECK(run_with_restarts(plan, ranks_exiting(kExitRecipeError), {}, 2) == kExitRecipeError);
  CHECK(read_text(log) == "0\n");
  std::filesystem::remove(log);
  CHECK(run_with_restarts(plan, ranks_exiting(0), {}, 5) == 0);
  CHECK(read_text(log) == "0\n");
}
