// Per-rank environments for a node's ranks.
#include <catch2/catch.hpp>

#include <map>

#include "cvtrain/core/error.h"
#include "cvtrain/launch/launch_plan.h"

using namespace cvtrain;

TEST_CASE("node 1 of 2 with 3 ranks each gets ranks 3 to 5", "[launch]") {
  LaunchPlan plan;
  plan.nproc_per_node = 3;
  plan.nnodes = 2;
  plan.node_rank = 1;
  plan.master_addr = "head";
  plan.master_port = 1234;
  const auto ranks = local_ranks(plan, {"prog", "--x"});
  REQUIRE(ranks.size() == 3);
  const std::map<std::string, std::string> env(ranks[2].env.begin(), ranks[2].env.end());
  CHECK(ranks[2].label == "rank 5");
  CHECK(ranks[2].argv == std::vector<std::string>{"prog", "--x"});
  CHECK(env.at("RANK") == "5");
  CHECK(env.at("LOCAL_RANK") == "2");
  CHECK(env.at("WORLD_SIZE") == "6");
  CHECK(env.at("LOCAL_WORLD_SIZE") == "3");
  CHECK(env.at("GROUP_RANK") == "1");
  CHECK(env.at("MASTER_ADDR") == "head");
  CHECK(env.at("MASTER_PORT") == "1234");
}

TEST_CASE("a node rank outside the job is an error", "[launch]") {
  LaunchPlan plan;
  plan.nnodes = 2;
  plan.node_rank = 2;
  CHECK_THROWS_WITH(local_ranks(plan, {"prog"}), Catch::Contains("node_rank 2"));
}
