// Job steps inside a Slurm allocation, as a sweep runs its trials under sbatch: what the
// allocation holds (CPUs per node, GPUs per node, memory), how many trials of a given shape fit at
// once without oversubscribing it, and the `srun` line that runs one trial as one step (--exact, so
// concurrent steps get disjoint CPUs and GPUs, and Slurm holds a step back rather than share).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cvtrain/launch/rank_environment.h"

namespace cvtrain {

struct SlurmAllocation {
  std::string job_id;
  std::vector<int> cpus_per_node;  // SLURM_JOB_CPUS_PER_NODE ("36(x2),18"), one entry per node
  int gpus_per_node = 0;           // SLURM_GPUS_PER_NODE ("8", "h100:8"), else SLURM_GPUS_ON_NODE
  int64_t mem_per_node_mb = 0;     // SLURM_MEM_PER_NODE; 0: not set (memory is not scheduled, or given per CPU)
  int64_t mem_per_cpu_mb = 0;      // SLURM_MEM_PER_CPU
};

// The allocation when this process runs in one but is not a task of one of its steps: the batch
// script, or an salloc shell. nullopt outside Slurm and inside a step (srun's tasks are ranks).
// Throws Error naming the variable when one is malformed.
std::optional<SlurmAllocation> slurm_allocation(const EnvLookup& env);

// One trial as a step: `tasks` ranks over `nodes` nodes, each rank with `cpus_per_task` CPUs and,
// on GPUs, one GPU (`gpus_per_node` of them on each of the step's nodes).
struct StepShape {
  int tasks = 1;
  int nodes = 1;
  int cpus_per_task = 1;
  int gpus_per_node = 0;
  int64_t mem_mb = 0;          // --mem per node; 0: not given
  int64_t mem_per_cpu_mb = 0;  // --mem-per-cpu; 0: not given
};

struct StepPlan {
  StepShape shape;
  int concurrent = 1;  // trials that fit in the allocation at once (at most the number wanted)
};

// Trials of `ranks` ranks each (on GPUs one GPU per rank), `wanted` of them at once if they fit:
// the CPUs (or, on GPUs, the GPUs and their share of the CPUs) are split among them. Throws Error
// when not even one trial fits, with the arithmetic.
StepPlan plan_steps(const SlurmAllocation& allocation, int ranks, bool on_gpus, int wanted);

// srun's arguments for one step of that shape, `name` its step name (squeue -s shows it).
std::vector<std::string> srun_arguments(const StepShape& shape, const std::string& name);

// "srun -N1 -n2 -c4 --gpus-per-node=2": the shape in a few words, for logs.
std::string describe_step(const StepShape& shape);

}  // namespace cvtrain
