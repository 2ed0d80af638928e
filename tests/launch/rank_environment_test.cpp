// Rank detection from torchrun-style and Slurm environments.
#include <catch2/catch.hpp>

#include <map>

#include "cvtrain/core/error.h"
#include "cvtrain/launch/rank_environment.h"
#include "fake_environment.h"

using namespace cvtrain;
using cvtrain::testing::env_of;

namespace {

const std::map<std::string, std::string> kSlurmTask = {
    {"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"}, {"SLURM_NODEID", "1"},
    {"SLURM_STEP_ID", "0"}, {"SLURM_STEP_NODELIST", "gpu[03-04]"}, {"SLURM_JOB_ID", "123456"}};

}  // namespace

TEST_CASE("no launcher variables: cvtrain is the launcher", "[launch]") {
  CHECK_FALSE(rank_from_environment(env_of({})).has_value());
}

TEST_CASE("torchrun variables describe the rank", "[launch]") {
  const auto info = rank_from_environment(env_of({{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "4"},
                                                  {"LOCAL_WORLD_SIZE", "2"}, {"GROUP_RANK", "1"},
                                                  {"MASTER_ADDR", "10.1.2.3"}, {"MASTER_PORT", "29400"}}));
  REQUIRE(info);
  CHECK(info->source == "torchrun");
  CHECK(info->rank == 3);
  CHECK(info->local_rank == 1);
  CHECK(info->world_size == 4);
  CHECK(info->local_world_size == 2);
  CHECK(info->node_rank == 1);
  CHECK(info->master_addr == "10.1.2.3");
  CHECK(info->master_port == 29400);
  CHECK_FALSE(info->agent_store);
  CHECK(info->attempt == 0);
}

TEST_CASE("under torchrun's agent the store exists already and restarts are counted", "[launch]") {
  const auto info = rank_from_environment(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"},
                                                  {"TORCHELASTIC_USE_AGENT_STORE", "True"}, {"TORCHELASTIC_RESTART_COUNT", "2"}}));
  REQUIRE(info);
  CHECK(info->agent_store);
  CHECK(info->attempt == 2);
}

TEST_CASE("incomplete or inconsistent torchrun variables are named", "[launch]") {
  CHECK_THROWS_WITH(rank_from_environment(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}})),
                    Catch::Contains("MASTER_ADDR"));
  CHECK_THROWS_WITH(rank_from_environment(env_of({{"RANK", "two"}, {"WORLD_SIZE", "2"}})), Catch::Contains("RANK='two'"));
  CHECK_THROWS_WITH(rank_from_environment(env_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}})),
                    Catch::Contains("outside world size 2"));
}

TEST_CASE("an srun task takes rank, world and master host from Slurm", "[launch]") {
  const auto info = rank_from_environment(env_of(kSlurmTask));
  REQUIRE(info);
  CHECK(info->source == "slurm");
  CHECK(info->rank == 5);
  CHECK(info->world_size == 8);
  CHECK(info->local_rank == 1);
  CHECK(info->node_rank == 1);
  CHECK(info->local_world_size == 4);
  CHECK(info->master_addr == "gpu03");
  CHECK(info->master_port == 20000 + 123456 % 20000);
  CHECK(rank_from_environment(env_of(kSlurmTask), 31000)->master_port == 31000);
}

TEST_CASE("the batch script itself is not a rank and torchrun inside Slurm wins", "[launch]") {
  auto batch = kSlurmTask;
  batch.erase("SLURM_STEP_ID");
  CHECK_FALSE(rank_from_environment(env_of(batch)).has_value());
  batch["SLURM_STEP_ID"] = "4294967294";
  CHECK_FALSE(rank_from_environment(env_of(batch)).has_value());
  auto both = kSlurmTask;
  both.insert({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "localhost"}, {"MASTER_PORT", "29500"}});
  CHECK(rank_from_environment(env_of(both))->source == "torchrun");
}

TEST_CASE("the cores for a node's ranks are a sweep trial's share, Slurm's CPUs per task in a step, else what the process may use",
          "[launch]") {
  auto task = kSlurmTask;
  task["SLURM_CPUS_PER_TASK"] = "12";
  CHECK(cores_for_local_ranks(env_of(task), 4, 128) == 48);  // 4 ranks of 12 CPUs on a 128-core node
  task.erase("SLURM_CPUS_PER_TASK");
  CHECK(cores_for_local_ranks(env_of(task), 4, 128) == 128);
  auto batch = kSlurmTask;
  batch["SLURM_STEP_ID"] = "batch";
  batch["SLURM_CPUS_PER_TASK"] = "12";
  CHECK(cores_for_local_ranks(env_of(batch), 1, 24) == 24);  // the batch script launches, with its own mask
  CHECK(cores_for_local_ranks(env_of({}), 2, 0) == 1);
  // A sweep's trial on this machine: its share, never more than the process may use.
  CHECK(cores_for_local_ranks(env_of({{"CVTRAIN_JOB_CORES", "4"}}), 1, 16) == 4);
  CHECK(cores_for_local_ranks(env_of({{"CVTRAIN_JOB_CORES", "40"}}), 1, 16) == 16);
  CHECK_THROWS_WITH(cores_for_local_ranks(env_of({{"CVTRAIN_JOB_CORES", "four"}}), 1, 16), Catch::Contains("CVTRAIN_JOB_CORES='four'"));
}
