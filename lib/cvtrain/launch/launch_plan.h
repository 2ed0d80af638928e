// The ranks this node starts: torchrun's variable names and numbering (rank = node_rank *
// nproc_per_node + local_rank), so any torchrun-aware program can be a rank.
#pragma once

#include <string>
#include <vector>

#include "cvtrain/launch/supervisor.h"

namespace cvtrain {

struct LaunchPlan {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int attempt = 0;  // restarts so far: TORCHELASTIC_RESTART_COUNT, as torchrun sets it
};

// Throws Error when node_rank is outside [0, nnodes) or a count is below 1.
std::vector<RankProcess> local_ranks(const LaunchPlan& plan, const std::vector<std::string>& command);

}  // namespace cvtrain
