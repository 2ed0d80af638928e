// Environment parsing for foreign launchers. Under Slurm only srun's tasks are ranks: the batch
// script itself (no SLURM_STEP_ID, or the batch step's id) is not, so `cvtrain` typed there
// launches instead of waiting for peers that never come.
#include "cvtrain/launch/rank_environment.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "cvtrain/core/cpu_budget.h"
#include "cvtrain/core/error.h"
#include "cvtrain/launch/nodelist.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {
namespace {

constexpr const char* kBatchStepId = "4294967294";  // SLURM_BATCH_SCRIPT

int integer_variable(const EnvLookup& env, const std::string& name) {
  const auto value = env(name);
  if (!value) throw Error(fmt::format("environment: {} is not set", name));
  try {
    size_t used = 0;
    const int v = std::stoi(*value, &used);
    if (used == value->size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  throw Error(fmt::format("environment: {}='{}' is not a non-negative integer", name, *value));
}

int optional_integer(const EnvLookup& env, const std::string& name, int fallback) {
  return env(name) ? integer_variable(env, name) : fallback;
}

void check_rank(const RankInfo& info, const char* source) {
  if (info.world_size < 1 || info.rank >= info.world_size)
    throw Error(fmt::format("environment ({}): rank {} is outside world size {}", source, info.rank, info.world_size));
  if (info.local_rank >= info.local_world_size)
    throw Error(fmt::format("environment ({}): local rank {} is outside local world size {}", source, info.local_rank,
                            info.local_world_size));
}

RankInfo from_torchrun(const EnvLookup& env) {
  RankInfo info;
  info.source = "torchrun";
  info.rank = integer_variable(env, "RANK");
  info.world_size = integer_variable(env, "WORLD_SIZE");
  info.local_rank = optional_integer(env, "LOCAL_RANK", 0);
  info.local_world_size = optional_integer(env, "LOCAL_WORLD_SIZE", info.world_size);
  info.node_rank = optional_integer(env, "GROUP_RANK", info.rank / info.local_world_size);
  const auto addr = env("MASTER_ADDR");
  if (!addr) throw Error("environment: RANK is set but MASTER_ADDR is not (torchrun sets both)");
  info.master_addr = *addr;
  info.master_port = integer_variable(env, "MASTER_PORT");
  info.agent_store = env("TORCHELASTIC_USE_AGENT_STORE").value_or("") == "True";
  info.attempt = optional_integer(env, "TORCHELASTIC_RESTART_COUNT", 0);
  check_rank(info, "torchrun");
  return info;
}

RankInfo from_slurm(const EnvLookup& env, int port) {
  RankInfo info;
  info.source = "slurm";
  info.rank = integer_variable(env, "SLURM_PROCID");
  info.world_size = integer_variable(env, "SLURM_NTASKS");
  info.local_rank = integer_variable(env, "SLURM_LOCALID");
  info.node_rank = integer_variable(env, "SLURM_NODEID");
  const auto list = env("SLURM_STEP_NODELIST") ? env("SLURM_STEP_NODELIST") : env("SLURM_JOB_NODELIST");
  if (!list) throw Error("environment: neither SLURM_STEP_NODELIST nor SLURM_JOB_NODELIST is set");
  const auto hosts = expand_nodelist(*list);
  info.master_addr = hosts.front();
  const int nodes = static_cast<int>(hosts.size());
  info.local_world_size = (info.world_size + nodes - 1) / nodes;
  info.master_port = port > 0 ? port : 20000 + optional_integer(env, "SLURM_JOB_ID", 9500) % 20000;
  check_rank(info, "slurm");
  return info;
}

}  // namespace

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    return value ? std::optional<std::string>(value) : std::nullopt;
  };
}

std::optional<RankInfo> rank_from_environment(const EnvLookup& env, int port) {
  if (env("RANK") || env("WORLD_SIZE")) return from_torchrun(env);
  const auto step = env("SLURM_STEP_ID");
  if (env("SLURM_PROCID") && step && *step != kBatchStepId && *step != "batch") return from_slurm(env, port);
  return std::nullopt;
}

unsigned cores_for_local_ranks(const EnvLookup& env, int local_ranks, unsigned usable) {
  if (const int share = optional_integer(env, kJobCoresVariable, 0); share > 0)
    return std::min(static_cast<unsigned>(share), std::max(1u, usable));
  const auto step = env("SLURM_STEP_ID");
  const auto per_task = env("SLURM_CPUS_PER_TASK");
  if (step && *step != kBatchStepId && *step != "batch" && per_task) {
    const int cpus = optional_integer(env, "SLURM_CPUS_PER_TASK", 0);
    if (cpus > 0) return static_cast<unsigned>(cpus * std::max(1, local_ranks));
  }
  return std::max(1u, usable);
}

int64_t worker_threads(const WorkerCount& workers, int local_ranks, bool on_gpu) {
  if (!workers.automatic) return workers.count;
  const unsigned ranks = static_cast<unsigned>(std::max(1, local_ranks));
  const unsigned cores = cores_for_local_ranks(process_environment(), static_cast<int>(ranks), usable_cpus());
  return automatic_workers(std::max(1u, cores / ranks), on_gpu, WorkerCount::kMaxAutoWorkers);
}

}  // namespace cvtrain
