// Who this process is in a job: read from torchrun-style variables, from Slurm's, or absent
// (then cvtrain is the launcher itself).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace cvtrain {

struct WorkerCount;

struct RankInfo {
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  int local_world_size = 1;
  int node_rank = 0;           // torchrun's GROUP_RANK
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string source;          // "torchrun" or "slurm"
  bool agent_store = false;    // torchrun's agent already serves the store (TORCHELASTIC_USE_AGENT_STORE)
  int attempt = 0;             // torchrun's restart count: keys of earlier attempts must not count
};

using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup process_environment();

// torchrun variables (RANK, WORLD_SIZE, ...) win over Slurm's; nullopt when neither describes a
// rank. `port` > 0 overrides the Slurm-derived port (20000 + job id % 20000).
// Throws Error naming the variable when a set is incomplete or malformed.
std::optional<RankInfo> rank_from_environment(const EnvLookup& env, int port = 0);

// Set by `cvtrain sweep` for a trial on this machine: the cores its ranks share, so that trials
// running side by side do not each take every core (data.workers: auto).
constexpr const char* kJobCoresVariable = "CVTRAIN_JOB_CORES";

// The cores this node gives the job's `local_ranks` ranks together, to share out among their
// threads and decode workers: CVTRAIN_JOB_CORES where set (at most `usable`); in a Slurm step that
// set SLURM_CPUS_PER_TASK, that many per rank (a rank bound to its own CPUs sees only those in its
// mask); else `usable` (core/cpu_budget.h's usable_cpus() of this process, which every local rank
// shares).
unsigned cores_for_local_ranks(const EnvLookup& env, int local_ranks, unsigned usable);

// data.workers as decode threads per rank: a number as given; auto, each rank's share of the cores
// this node gives the job's `local_ranks` ranks (core/cpu_budget.h's automatic_workers).
int64_t worker_threads(const WorkerCount& workers, int local_ranks, bool on_gpu);

}  // namespace cvtrain
