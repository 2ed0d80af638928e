// Slurm allocations read from the batch script's environment, how many trials of a shape fit at
// once, and the srun line that runs one trial as a job step.
#include <catch2/catch.hpp>

#include <map>

#include "cvtrain/core/error.h"
#include "cvtrain/core/text.h"
#include "cvtrain/launch/slurm_steps.h"
#include "fake_environment.h"

using namespace cvtrain;
using cvtrain::testing::env_of;

namespace {

SlurmAllocation cpus(std::vector<int> per_node) {
  SlurmAllocation a;
  a.job_id = "77";
  a.cpus_per_node = std::move(per_node);
  return a;
}

}  // namespace

TEST_CASE("the batch script and salloc are in an allocation, but a step's task and a plain shell are not", "[launch]") {
  CHECK_FALSE(slurm_allocation(env_of({})));
  const std::map<std::string, std::string> batch{{"SLURM_JOB_ID", "4242"}, {"SLURM_JOB_CPUS_PER_NODE", "36(x2),18"},
                                                 {"SLURM_GPUS_PER_NODE", "h100:4"}, {"SLURM_MEM_PER_NODE", "64000"},
                                                 {"SLURM_STEP_ID", "4294967294"}};
  const auto a = slurm_allocation(env_of(batch));
  REQUIRE(a);
  CHECK(a->job_id == "4242");
  CHECK(a->cpus_per_node == std::vector<int>{36, 36, 18});
  CHECK(a->gpus_per_node == 4);
  CHECK(a->mem_per_node_mb == 64000);
  auto step = batch;
  step["SLURM_STEP_ID"] = "0";
  CHECK_FALSE(slurm_allocation(env_of(step)));  // srun's task: a rank, not a sweep
  CHECK(slurm_allocation(env_of({{"SLURM_JOB_ID", "5"}, {"SLURM_JOB_NUM_NODES", "2"}, {"SLURM_CPUS_ON_NODE", "8"}}))->cpus_per_node ==
        std::vector<int>{8, 8});
  CHECK_THROWS_WITH(slurm_allocation(env_of({{"SLURM_JOB_ID", "5"}, {"SLURM_JOB_CPUS_PER_NODE", "4(x"}})),
                    Catch::Contains("SLURM_JOB_CPUS_PER_NODE"));
}

TEST_CASE("CPU trials share the allocation's CPUs without oversubscribing them", "[launch]") {
  // try_local.sh's allocation: two nodes of one CPU. Four wanted, two fit, one CPU each.
  StepPlan plan = plan_steps(cpus({1, 1}), 1, false, 4);
  CHECK(plan.concurrent == 2);
  CHECK(plan.shape.cpus_per_task == 1);
  CHECK(plan.shape.nodes == 1);
  // Two nodes of 8: two trials of 2 ranks get 4 CPUs a rank; every trial fits on one node.
  plan = plan_steps(cpus({8, 8}), 2, false, 2);
  CHECK(plan.concurrent == 2);
  CHECK(plan.shape.cpus_per_task == 4);
  CHECK(plan.shape.nodes == 1);
  CHECK(plan.concurrent * plan.shape.tasks * plan.shape.cpus_per_task <= 16);
  // A rank never gets more CPUs than one node has.
  plan = plan_steps(cpus({4, 4, 4}), 1, false, 1);
  CHECK(plan.shape.cpus_per_task == 4);
  CHECK_THROWS_WITH(plan_steps(cpus({1}), 2, false, 1), Catch::Contains("a trial of 2 rank(s) needs at least 2 CPUs; Slurm job 77 has 1"));
}

TEST_CASE("GPU trials take whole GPUs with their share of the node's CPUs", "[launch]") {
  SlurmAllocation a = cpus({64, 64});
  a.gpus_per_node = 8;
  StepPlan plan = plan_steps(a, 2, true, 16);
  CHECK(plan.concurrent == 8);  // 2 nodes x 4 trials of 2 GPUs
  CHECK(plan.shape.gpus_per_node == 2);
  CHECK(plan.shape.cpus_per_task == 8);
  plan = plan_steps(a, 16, true, 2);  // two whole nodes per trial
  CHECK(plan.concurrent == 1);
  CHECK(plan.shape.nodes == 2);
  CHECK(plan.shape.gpus_per_node == 8);
  CHECK_THROWS_WITH(plan_steps(a, 12, true, 1), Catch::Contains("neither fits on one node of 8 GPUs nor fills whole nodes"));
  CHECK_THROWS_WITH(plan_steps(cpus({8}), 1, true, 1), Catch::Contains("Slurm job 77 has no GPUs"));
}

TEST_CASE("srun runs one trial as an exact step with its memory share", "[launch]") {
  SlurmAllocation a = cpus({8, 8});
  a.mem_per_node_mb = 32000;
  const StepPlan plan = plan_steps(a, 1, false, 4);  // 4 trials: 4 CPUs each, half a node's memory
  CHECK(plan.concurrent == 4);
  const std::vector<std::string> args = srun_arguments(plan.shape, "trial-0003");
  CHECK(join(args, " ") == "srun --exact --kill-on-bad-exit=1 --input=none --job-name=trial-0003 --nodes=1 --ntasks=1 --cpus-per-task=4 "
                           "--mem=16000M");
  CHECK(describe_step(plan.shape) == "srun -N1 -n1 -c4");
  a.mem_per_node_mb = 0;
  a.mem_per_cpu_mb = 2000;
  CHECK(join(srun_arguments(plan_steps(a, 1, false, 4).shape, "t"), " ").find("--mem-per-cpu=2000M") != std::string::npos);
}
