// The launcher's policy (see job.h): plans, the process's own rank, restarts and final exit codes.
#include "cvtrain/launch/job.h"

#include <fmt/format.h>

#include "cvtrain/core/error.h"
#include "cvtrain/core/failure_log.h"
#include "cvtrain/core/log.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

LaunchPlan launch_plan_of(const DistributedSpec& spec, int world_size) {
  LaunchPlan plan;
  plan.nnodes = static_cast<int>(spec.nnodes);
  plan.nproc_per_node = world_size / plan.nnodes;
  plan.node_rank = static_cast<int>(spec.node_rank);
  plan.master_addr = spec.master_addr;
  plan.master_port = spec.master_port > 0 ? static_cast<int>(spec.master_port) : 29500;
  return plan;
}

RankInfo rank_of_process(std::optional<RankInfo> from_environment, const DistributedSpec& spec) {
  if (from_environment) {
    if (from_environment->source == "slurm" && spec.master_port > 0) from_environment->master_port = static_cast<int>(spec.master_port);
    return *from_environment;
  }
  RankInfo only_rank;  // the whole job in this process
  only_rank.master_addr = spec.master_addr;
  if (spec.master_port > 0) only_rank.master_port = static_cast<int>(spec.master_port);
  return only_rank;
}

bool ends_job(int exit_code) { return exit_code == 0 || exit_code == kExitPreempted || exit_code == kExitRecipeError; }

int run_group(const LaunchPlan& plan, const std::vector<std::string>& command, const SupervisorOptions& options) {
  const JobOutcome outcome = supervise(local_ranks(plan, command), options);
  if (outcome.exit_code == kExitPreempted)
    log::info("stopped on request: the ranks saved a checkpoint and exited {}; run the same command again to resume", kExitPreempted);
  else if (outcome.exit_code != 0)
    log::error("{} {}; the other ranks were stopped", outcome.failed, outcome.how);
  // A rank that exited with an error recorded it; one killed or hung could not. (Only those: a rank
  // refused a folder another run holds exits with an error, and this must not write there.)
  const bool unrecorded = outcome.exit_code == kExitHang || outcome.exit_code > 128;
  if (unrecorded && !options.run_folder.empty())
    record_failure(options.run_folder, "launcher", fmt::format("{} {}; the other ranks were stopped", outcome.failed, outcome.how));
  return outcome.exit_code;
}

int run_with_restarts(LaunchPlan plan, const std::vector<std::string>& command, const SupervisorOptions& options, int max_restarts) {
  for (;; ++plan.attempt) {
    log::info("launching {} rank(s) on this node (node {} of {}), rendezvous at {}:{}", plan.nproc_per_node, plan.node_rank, plan.nnodes,
              plan.master_addr, plan.master_port);
    const int code = run_group(plan, command, options);
    if (ends_job(code) || plan.attempt >= max_restarts) return code;
    log::warn("restarting the group ({} of distributed.max_restarts {}) from the newest checkpoint", plan.attempt + 1, max_restarts);
  }
}

}  // namespace cvtrain
