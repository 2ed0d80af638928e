// `cvtrain sweep`: trials of a recipe with the search space's values, each an ordinary cvtrain run
// folder under the sweep's folder, run a few at a time on this machine's GPUs (gpus_per_trial
// each, by CUDA_VISIBLE_DEVICES) or cores (shared out by OMP_NUM_THREADS), or inside a Slurm
// allocation as job steps (one srun per trial, as many at once as it holds). Every candidate recipe
// is checked as `cvtrain check` would before any trial starts. sweep.jsonl records each trial's
// start and end; started again, a sweep reruns no finished trial and lets an interrupted one
// resume from its checkpoint. With early_stopping, trials pause at ASHA's rungs (train.stop_at_epoch)
// and only the promoted ones continue, exactly, from their checkpoints. results.md lists the
// trials, best first. Torch-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cvtrain/launch/slurm_steps.h"

namespace cvtrain {

struct SweepOptions {
  std::string recipe;                  // the recipe every trial starts from
  std::vector<std::string> overrides;  // KEY=VALUE for every trial, before the searched values
  std::string space_file;              // empty: the recipe's `sweep:` section
  std::vector<std::string> space_overrides;  // sweep.KEY=VALUE, set into the space (recipe/sweep_space.h)
  std::string folder;                  // the sweep's folder; empty: the recipe's output + "_sweep"
  std::string executable;              // cvtrain itself, which runs each trial
  int visible_gpus = 0;
  unsigned cores = 1;
  std::optional<SlurmAllocation> slurm;  // set: each trial runs as a job step of this allocation (srun)
};

struct SweepSummary {
  std::string folder;
  int64_t done = 0, failed = 0, stopped = 0;  // stopped: interrupted, to continue on the next start
  int64_t started = 0, stopped_early = 0;     // early_stopping: trials begun, and those it did not promote
  int64_t epochs_trained = 0, epochs_without_stopping = 0;  // against every started trial run to train.epochs
  std::string best_trial;                     // its folder; empty when no trial reported the metric
  std::optional<double> best_metric;
  std::string table;                          // results.md's table
};

// Throws RecipeError for a bad space or a candidate recipe that does not load (before any trial
// starts, naming the trial's values and the key); Error when the folder holds a sweep of another
// space. A trial that fails is recorded with its exit code and message, and the sweep goes on.
SweepSummary run_sweep(const SweepOptions& options);

}  // namespace cvtrain
