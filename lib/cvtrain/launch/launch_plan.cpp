// Per-rank environments for a node's ranks.
#include "cvtrain/launch/launch_plan.h"

#include <fmt/format.h>

#include "cvtrain/core/error.h"

namespace cvtrain {

std::vector<RankProcess> local_ranks(const LaunchPlan& plan, const std::vector<std::string>& command) {
  if (plan.nproc_per_node < 1 || plan.nnodes < 1)
    throw Error(fmt::format("launch: nproc_per_node {} and nnodes {} must be at least 1", plan.nproc_per_node, plan.nnodes));
  if (plan.node_rank < 0 || plan.node_rank >= plan.nnodes)
    throw Error(fmt::format("launch: node_rank {} is outside [0, {})", plan.node_rank, plan.nnodes));
  if (command.empty()) throw Error("launch: no program to run");
  const int world = plan.nproc_per_node * plan.nnodes;
  std::vector<RankProcess> ranks;
  for (int local = 0; local < plan.nproc_per_node; ++local) {
    const int rank = plan.node_rank * plan.nproc_per_node + local;
    ranks.push_back(RankProcess{command,
                                {{"RANK", std::to_string(rank)},
                                 {"LOCAL_RANK", std::to_string(local)},
                                 {"WORLD_SIZE", std::to_string(world)},
                                 {"LOCAL_WORLD_SIZE", std::to_string(plan.nproc_per_node)},
                                 {"GROUP_RANK", std::to_string(plan.node_rank)},
                                 {"MASTER_ADDR", plan.master_addr},
                                 {"MASTER_PORT", std::to_string(plan.master_port)},
                                 {"TORCHELASTIC_RESTART_COUNT", std::to_string(plan.attempt)}},
                                fmt::format("rank {}", rank)});
  }
  return ranks;
}

}  // namespace cvtrain
