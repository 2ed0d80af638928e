// Verdicts with advice: from a run's (or an epoch's) step breakdown, the rank comparison and the
// memory figures, one sentence per bottleneck with its number and the recipe keys to change, and
// perf_summary.json, the same verdicts for programs. Thresholds come from the recipe's observe
// section (docs/performance.md, "Where the time goes"). Torch-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cvtrain/observe/rank_comparison.h"
#include "cvtrain/observe/step_phases.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

struct RunPlan;

// Steps far slower than the rest: above mean + 3 sigma of the steps before them, after warm-up.
class StepOutliers {
 public:
  static constexpr int64_t kWarmupSteps = 5;  // first steps: allocator, cuDNN autotuning, thread start
  static constexpr int64_t kMinSamples = 10;  // steps measured before any can be an outlier
  void add(const PhaseSeconds& step);
  int64_t count() const { return count_; }
  int64_t between_steps() const { return between_steps_; }  // outliers whose excess lies in `other`
  double longest_s() const { return longest_s_; }
  double mean_s() const { return mean_; }
  // What the outliers took beyond the mean, as a share of all steps' time after warm-up: how much
  // they matter (a few noisy steps in thousands are not what holds a run back).
  double excess_share() const { return total_s_ > 0 ? excess_s_ / total_s_ : 0; }
  double excess_s() const { return excess_s_; }
  // The longest run of consecutive outliers slow inside the step, and the run's step it began at
  // (from 1, after `starts_after`): steps that stay slow are a slowdown of the machine, not extra work.
  int64_t longest_streak() const { return longest_streak_; }
  int64_t longest_streak_start() const { return first_step_ + longest_streak_start_; }
  // A resumed run's steps are numbered on from the checkpoint's.
  void starts_after(int64_t step) { first_step_ = step; }

 private:
  void count_streak(bool slow_inside);
  int64_t seen_ = 0, samples_ = 0, count_ = 0, between_steps_ = 0;
  int64_t streak_ = 0, streak_start_ = 0, longest_streak_ = 0, longest_streak_start_ = 0, first_step_ = 0;
  double mean_ = 0, m2_ = 0, longest_s_ = 0;  // Welford's running mean and squared deviations
  double excess_s_ = 0, total_s_ = 0;
};

// What the verdicts are judged on.
struct PerfFacts {
  PhaseTotals phases;        // rank 0's breakdown
  // Over several ranks, the exposed-communication fraction of the rank that waited least over the
  // compared steps: below the threshold, the others' extra wait is a straggler's doing, not the network's.
  std::optional<double> least_comm_fraction;
  double images_per_s = 0;   // the job's
  int world_size = 1;
  int local_world_size = 1;  // ranks on this node, sharing its cores
  double gradient_mb = 0;    // the parameters' gradients in MiB (0: unknown)
  unsigned cores = 0;        // this node's
  bool on_gpu = false;
  bool gpu_has_fast_bf16 = false;
  std::optional<double> peak_tflops;        // for the precision in use
  double tflops = 0;                        // achieved, the job's
  std::optional<double> memory_fraction;    // peak reserved / device memory, the largest over ranks
  std::optional<StragglerFinding> straggler;
  std::vector<std::string> rank_labels;     // rank_label() of every rank
  std::vector<PhaseSeconds> rank_means;     // every rank's mean seconds per step in each phase (several ranks)
  std::optional<double> read_share;         // of the input workers' busy time, the share spent reading files
  std::optional<double> progressive_share;  // of the samples the workers decoded, the share that were progressive JPEGs
  std::optional<double> gpu_drained;        // CUDA: the share of compute phases the GPU finished before the host issued more
  std::vector<double> epoch_peak_mb;        // the peak memory (MB above the start) after each epoch so far
  int64_t first_peak_epoch = 1;             // the epoch of epoch_peak_mb[0]: a resumed run starts later
  StepOutliers outliers;
};

struct Verdict {
  // input_bound, storage_bound, copy_bound, comm_bound, host_bound, straggler, stall, step_outliers, memory_pressure,
  // memory_growth, precision
  std::string kind;
  double value = 0;  // the number the verdict rests on (a fraction, a score, a count)
  std::string message;
  // Nothing to change (a one-off stall, outliers that cost under kMildOutlierShare of the step
  // time): said as a note, not a warning, so that warnings stay worth reading.
  bool mild = false;
};

// Step outliers whose excess is below this share of the step time are mild: noise, not a cause.
constexpr double kMildOutlierShare = 0.01;
// So many outliers in a row, slow inside the step, are a slowdown rather than one-off events.
constexpr int64_t kSlowdownStreak = 20;

// `recipe` gives the thresholds (observe.*) and the settings as written; `plan` what they resolved to
// (micro-batch, workers, strategy), which the advice quotes.
std::vector<Verdict> perf_verdicts(const PerfFacts& facts, const Recipe& recipe, const RunPlan& plan);

// The workers per rank that would feed the step without waiting, from `workers` that left it
// waiting `data_fraction` of the time (each worker's rate measured by the wait itself).
int64_t workers_to_keep_up(int64_t workers, double data_fraction);

// perf_summary.json: the breakdown, utilisation, the straggler finding and the verdicts.
std::string perf_summary_json(const PerfFacts& facts, const std::vector<Verdict>& verdicts);

}  // namespace cvtrain
