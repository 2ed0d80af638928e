// The run's profile as it goes: steps' phase times in, per interval, epoch and run; the rank
// comparison at each metrics line; the verdicts at each epoch and at the end. The trainer hands
// steps and gathered windows in and takes record fields, log lines and perf_summary.json out.
// Torch-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cvtrain/observe/perf_verdicts.h"
#include "cvtrain/observe/rank_comparison.h"
#include "cvtrain/observe/step_phases.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

// What the monitor knows of the job and the device, found once when the run starts.
struct PerfContext {
  int world_size = 1;
  int local_world_size = 1;
  unsigned cores = 0;
  bool on_gpu = false;
  bool gpu_has_fast_bf16 = false;
  std::string device_name;              // as CUDA names it; "cpu"
  std::optional<double> peak_tflops;    // observe.peak_tflops, else the known GPU's, for the precision in use
  int64_t device_memory_bytes = 0;      // 0 on CPU
  double gradient_mb = 0;               // the parameters' gradients in MiB, what distributed.bucket_mb divides
  std::vector<std::string> rank_labels;  // rank_label() of every rank
};

// The rank comparison of one window, for the metrics line.
struct RankFigures {
  PhaseSpread own;  // seconds per step of each rank's own work, over ranks
  int slowest = 0;
  double slowest_score = 1;
};

// What the input workers and the GPU's queue did over a stretch of steps: the workers' seconds
// reading and decoding (and the samples, of them progressive JPEGs), and the compute phases checked
// and found with the GPU run dry.
struct SourceTimes {
  double read_s = 0, decode_s = 0;
  int64_t samples = 0, progressive = 0;
  int64_t launch_phases = 0, launch_drained = 0;
  SourceTimes& operator+=(const SourceTimes& o);
};

class PerfMonitor {
 public:
  PerfMonitor(const Recipe& recipe, const RunPlan& plan, PerfContext context);

  void add_steps(const std::vector<PhaseSeconds>& steps);
  void add_sources(const SourceTimes& times);
  // After each epoch (1-based): its peak memory, MB above the start (for the memory-growth verdict).
  void add_epoch_peak(int64_t epoch, double peak_mb) {
    if (epoch_peaks_.empty()) first_peak_epoch_ = epoch;
    epoch_peaks_.push_back(peak_mb);
  }
  void starts_after(int64_t step) { outliers_.starts_after(step); }  // a resumed run: the checkpoint's step
  const PhaseTotals& interval() const { return interval_; }
  const PhaseTotals& epoch() const { return epoch_; }
  void restart_interval() { interval_.restart(); }
  void restart_epoch() {
    epoch_.restart();
    epoch_sources_ = SourceTimes{};
    epoch_ranks_ = RankSums{};
  }
  // This rank's mean phase seconds per step in the interval, for the all-gather.
  RankWindow interval_window() const;

  // Rank 0, with every rank's window: the figures for the metrics line, and a warning line when
  // a straggler turns chronic (a one-off stall stays in the metrics and the summary).
  RankFigures compare(const std::vector<RankWindow>& windows, std::optional<std::string>& warning);

  // The input-bound verdict of the interval, at most once per epoch.
  std::optional<std::string> interval_warning(int64_t epoch, double images_per_s, double tflops);

  // Verdicts over the epoch, or over the whole run.
  std::vector<Verdict> epoch_verdicts(double images_per_s, double tflops, std::optional<double> memory_fraction) const;
  std::vector<Verdict> run_verdicts(double images_per_s, double tflops, std::optional<double> memory_fraction) const;
  std::string summary_json(double images_per_s, double tflops, std::optional<double> memory_fraction) const;
  const PhaseTotals& run() const { return run_; }

  std::optional<double> mfu(double tflops) const;
  // The fraction of the device's memory that `bytes` are; nullopt on CPU.
  std::optional<double> memory_fraction(int64_t bytes) const;

 private:
  // Every rank's phase seconds over the compared windows' steps, and those steps.
  struct RankSums {
    std::vector<PhaseSeconds> seconds;
    int64_t steps = 0;
    void add(const std::vector<RankWindow>& windows, int64_t steps);
    // The smallest share of its step time that any rank spent waiting for communication.
    std::optional<double> least_comm_fraction() const;
  };
  PerfFacts facts(const PhaseTotals& phases, const SourceTimes& sources, const RankSums& ranks, double images_per_s, double tflops,
                  std::optional<double> memory_fraction, bool whole_run) const;

  const Recipe& recipe_;
  const RunPlan& plan_;
  PerfContext context_;
  PhaseTotals interval_, epoch_, run_;
  SourceTimes epoch_sources_, run_sources_;
  std::vector<double> epoch_peaks_;
  int64_t first_peak_epoch_ = 1;
  // A window can begin in the epoch before: only its steps within this epoch count for the epoch.
  RankSums epoch_ranks_, run_ranks_;
  StepOutliers outliers_;
  StragglerWatch stragglers_;
  int64_t warned_epoch_ = -1;
};

}  // namespace cvtrain
