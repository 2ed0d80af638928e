// The job a recipe describes, as cvtrain's launcher runs it: this node's launch plan, the rank
// this process is when it is the whole job or one task of torchrun or Slurm, and the restart rule
// (which exit codes end a job, which a group restart may retry).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cvtrain/launch/launch_plan.h"
#include "cvtrain/launch/rank_environment.h"
#include "cvtrain/launch/supervisor.h"

namespace cvtrain {

struct DistributedSpec;

// This node's share of a job of `world_size` ranks (distributed.master_port 0 means 29500).
LaunchPlan launch_plan_of(const DistributedSpec& spec, int world_size);

// The rank this process is: the environment's (torchrun's or Slurm's, where distributed.master_port
// wins over Slurm's derived port) or, without one, the only rank of a one-process job.
RankInfo rank_of_process(std::optional<RankInfo> from_environment, const DistributedSpec& spec);

// Success, a requested stop (kExitPreempted) and a recipe error end a job; a crash or a hang may
// be retried by a group restart.
bool ends_job(int exit_code);

// Supervises the plan's ranks once; logs how the job ended. Returns the job's exit code.
int run_group(const LaunchPlan& plan, const std::vector<std::string>& command, const SupervisorOptions& options);

// Runs the group, and again from its newest checkpoint after a failure that may be retried, up to
// `max_restarts` times (each attempt sets TORCHELASTIC_RESTART_COUNT). Returns the last exit code.
int run_with_restarts(LaunchPlan plan, const std::vector<std::string>& command, const SupervisorOptions& options, int max_restarts);

}  // namespace cvtrain
