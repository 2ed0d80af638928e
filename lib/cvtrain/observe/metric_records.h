// The metrics.jsonl schema as typed records: one `train` line per logging interval, one `epoch`
// line per epoch (with the memory report and, given validation data, the evaluation). Each record
// knows its JSON fields, in a fixed order, and the log line a person reads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cvtrain/observe/metrics_log.h"
#include "cvtrain/observe/perf_monitor.h"
#include "cvtrain/observe/step_phases.h"

namespace cvtrain {

struct TrainRecord {
  int64_t epoch = 0;  // 1-based
  int64_t step = 0;   // optimizer steps done
  double loss = 0;    // mean over the interval's finite steps and all ranks; NaN (null) when none was finite
  double lr = 0;
  double images_per_s = 0;
  double data_wait = 0;  // fraction of the interval blocked on the input pipeline
  double comm_wait = 0;  // fraction waiting for gradient communication after backward
  double step_s = 0;
  double train_tflops = 0;           // achieved forward + backward rate of the job
  std::optional<double> loss_scale;  // fp16 only
  std::optional<double> mfu;         // train_tflops / the device's peak, where the peak is known
  PhaseTotals breakdown;             // the interval's finished steps (none: no fields)
  std::optional<RankFigures> ranks;  // more than one rank
  MetricRecord to_record() const;
};

// The breakdown's fields: PHASE_frac (of the step time) and PHASE_s (seconds per step) for each
// phase, and breakdown_steps; nothing when no step was timed.
void append_breakdown(const PhaseTotals& breakdown, MetricRecord& record);

// What each rank holds (parameters, optimizer state: rank 0's) and every rank's peak memory.
struct MemoryReport {
  double param_mb = 0;
  double optimizer_state_mb = 0;
  std::vector<double> peak_mb_per_rank;  // above what each process held before the trainer started
  bool device_allocator = false;         // CUDA allocator figures, else the process's resident set
  double peak_mb() const;
  void append_to(MetricRecord& record) const;
  std::string describe() const;  // ", per rank: parameters ... MB, optimizer state ... MB, peak ..."
};

// An evaluation's figures: the mean loss and the task's scores by their metrics.jsonl names, its
// main one first (top1, top5 for classification; miou, pixel_acc, macc for segmentation).
struct EvalFigures {
  double loss = 0;
  std::vector<std::pair<std::string, double>> scores;
  double seconds = 0;  // the evaluation's wall time, outside the steps' breakdown
  double main() const;  // the first score; NaN without one
  // "val loss 0.4123 top-1 0.9012 top-5 0.9950", the scores as people write them.
  std::string text() const;
};

struct EpochRecord {
  int64_t epoch = 0;  // 1-based
  int64_t step = 0;
  double train_loss = 0;
  double epoch_s = 0;
  double images_per_s = 0;
  double data_wait = 0;
  int64_t bad_samples = 0;
  int64_t skipped_steps = 0;
  MemoryReport memory;
  PhaseTotals breakdown;
  std::optional<EvalFigures> eval;
  std::optional<EvalFigures> eval_ema;  // the same of train.ema's weight average
  MetricRecord to_record() const;
  std::string log_line() const;
};

// "top-1 0.9012 top-5 0.9950", "mIoU 0.8123 pixel accuracy 0.9567 ...": scores as people write them.
std::string scores_text(const std::vector<std::pair<std::string, double>>& scores);

// A mean; NaN (null in metrics.jsonl) when nothing was counted.
double mean_or_nan(double sum, int64_t count);

}  // namespace cvtrain
