// The profiler's place in the loop: it takes each step's phase times from the step's timer, adds
// the breakdown, MFU and (one all-gather) the rank comparison to every metrics line, the epoch's
// breakdown and verdicts to the epoch record, and at the end writes the run's summary and
// perf_summary.json. The rules themselves live in observe/ (perf_monitor.h).
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cvtrain/observe/metric_records.h"
#include "cvtrain/observe/perf_monitor.h"

namespace cvtrain {

class Communicator;
class StepTimer;
struct InputTimings;
struct LaunchChecks;
struct RankInfo;
struct Recipe;

// What the profiler knows of the job: the ranks' names (one all-gather), the device's peak for the
// precision in use (observe.peak_tflops, else the table of known GPUs; never a guess for a CPU), its
// memory and the node's cores. Collective.
PerfContext job_perf_context(const Recipe& recipe, const RankInfo& rank, const c10::Device& device, Communicator& comm);

class RunProfiler {
 public:
  // `recipe`, `comm` and `input` (the training workers' running times) outlive the profiler;
  // `flops_per_image` is the model's forward.
  RunProfiler(const Recipe& recipe, const RunPlan& plan, PerfContext context, Communicator& comm, const c10::Device& device,
              double flops_per_image, const InputTimings& input);

  void starts_after(int64_t step) { monitor_.starts_after(step); }  // a resumed run: the checkpoint's step
  void start_epoch(StepTimer& timer);
  void after_step(StepTimer& timer);
  // Collective (every rank at the same steps): fills the record's profile fields on rank 0 and
  // warns of an input-bound interval or a chronic straggler.
  void complete(int64_t epoch, TrainRecord& record);
  void complete(EpochRecord& record);
  // Rank 0, after the epoch's line: its verdicts.
  void report_epoch(const EpochRecord& record) const;
  // Rank 0, at the end: where the time went, the verdicts, and perf_summary.json at `summary_path`.
  void report_run(const std::string& summary_path) const;

 private:
  std::vector<RankWindow> gather_windows();
  double tflops(double images_per_s) const { return 3 * flops_per_image_ * images_per_s / 1e12; }  // forward + backward ~ 3 forwards
  std::optional<double> memory_fraction() const;
  // The workers' and the GPU queue's counts since the last call, into the monitor.
  void add_sources(const LaunchChecks& launches);

  const Recipe& recipe_;
  PerfMonitor monitor_;
  Communicator& comm_;
  c10::Device device_;
  double flops_per_image_;
  const InputTimings& input_;
  int64_t seen_read_ns_ = 0, seen_decode_ns_ = 0, seen_samples_ = 0, seen_progressive_ = 0, seen_launch_phases_ = 0,
          seen_launch_drained_ = 0;
  bool enabled_;
};

}  // namespace cvtrain
