// Interval, epoch and run accounting of the step breakdown (see perf_monitor.h).
#include "cvtrain/observe/perf_monitor.h"

#include <fmt/format.h>

#include <algorithm>

namespace cvtrain {
namespace {

constexpr int64_t kFewestSamplesForShare = 100;  // below, a share of progressive JPEGs is noise

}  // namespace

PerfMonitor::PerfMonitor(const Recipe& recipe, const RunPlan& plan, PerfContext context)
    : recipe_(recipe),
      plan_(plan),
      context_(std::move(context)),
      stragglers_(recipe.observe.straggler_score, recipe.observe.chronic_windows) {}

void PerfMonitor::add_steps(const std::vector<PhaseSeconds>& steps) {
  for (const PhaseSeconds& s : steps) {
    interval_.add_step(s);
    epoch_.add_step(s);
    run_.add_step(s);
    outliers_.add(s);
  }
}

SourceTimes& SourceTimes::operator+=(const SourceTimes& o) {
  read_s += o.read_s;
  decode_s += o.decode_s;
  samples += o.samples;
  progressive += o.progressive;
  launch_phases += o.launch_phases;
  launch_drained += o.launch_drained;
  return *this;
}

void PerfMonitor::add_sources(const SourceTimes& times) {
  epoch_sources_ += times;
  run_sources_ += times;
}

RankWindow PerfMonitor::interval_window() const {
  RankWindow w;
  for (size_t p = 0; p < kPhaseCount; ++p) w.seconds[p] = interval_.mean_s(static_cast<Phase>(p));
  return w;
}

RankFigures PerfMonitor::compare(const std::vector<RankWindow>& windows, std::optional<std::string>& warning) {
  const RankComparison c = compare_ranks(windows);
  epoch_ranks_.add(windows, std::min(interval_.steps(), epoch_.steps() - epoch_ranks_.steps));
  run_ranks_.add(windows, interval_.steps());
  // A window of one or two steps is noise (one slow step on a shared core), not a finding.
  constexpr int64_t kMinWindowSteps = 3;
  const std::optional<StragglerFinding> found =
      interval_.steps() >= kMinWindowSteps ? stragglers_.observe(c) : std::nullopt;
  if (found && found->windows_in_row == recipe_.observe.chronic_windows) {
    const std::string who =
        found->rank < static_cast<int>(context_.rank_labels.size()) ? context_.rank_labels[found->rank] : fmt::format("rank {}", found->rank);
    warning = fmt::format("straggler: {} at {:.2f} of the fastest rank's speed for {} logging windows in a row, most of it in {}", who,
                          found->score, found->windows_in_row, phase_name(found->phase));
  }
  return RankFigures{c.own, c.slowest, c.scores.empty() ? 1.0 : c.scores[c.slowest]};
}

void PerfMonitor::RankSums::add(const std::vector<RankWindow>& windows, int64_t window_steps) {
  seconds.resize(windows.size());
  for (size_t r = 0; r < windows.size(); ++r)
    for (size_t p = 0; p < kPhaseCount; ++p) seconds[r].seconds[p] += windows[r].seconds[p] * static_cast<double>(window_steps);
  steps += window_steps;
}

std::optional<double> PerfMonitor::RankSums::least_comm_fraction() const {
  std::optional<double> least;
  for (const PhaseSeconds& rank : seconds)
    if (rank.total() > 0) least = std::min(least.value_or(1.0), rank[Phase::kComm] / rank.total());
  return least;
}

std::optional<std::string> PerfMonitor::interval_warning(int64_t epoch, double images_per_s, double tflops) {
  if (warned_epoch_ == epoch || interval_.fraction(Phase::kData) < recipe_.observe.input_bound) return std::nullopt;
  for (const Verdict& v :
       perf_verdicts(facts(interval_, epoch_sources_, RankSums{}, images_per_s, tflops, std::nullopt, false), recipe_, plan_))
    if (v.kind == "input_bound") {
      warned_epoch_ = epoch;
      return v.message;
    }
  return std::nullopt;
}

std::vector<Verdict> PerfMonitor::epoch_verdicts(double images_per_s, double tflops, std::optional<double> memory_fraction) const {
  return perf_verdicts(facts(epoch_, epoch_sources_, epoch_ranks_, images_per_s, tflops, memory_fraction, false), recipe_, plan_);
}

std::vector<Verdict> PerfMonitor::run_verdicts(double images_per_s, double tflops, std::optional<double> memory_fraction) const {
  return perf_verdicts(facts(run_, run_sources_, run_ranks_, images_per_s, tflops, memory_fraction, true), recipe_, plan_);
}

std::string PerfMonitor::summary_json(double images_per_s, double tflops, std::optional<double> memory_fraction) const {
  const PerfFacts f = facts(run_, run_sources_, run_ranks_, images_per_s, tflops, memory_fraction, true);
  return perf_summary_json(f, perf_verdicts(f, recipe_, plan_));
}

std::optional<double> PerfMonitor::mfu(double tflops) const {
  if (!context_.peak_tflops || *context_.peak_tflops <= 0) return std::nullopt;
  return tflops / *context_.peak_tflops;
}

std::optional<double> PerfMonitor::memory_fraction(int64_t bytes) const {
  if (context_.device_memory_bytes <= 0) return std::nullopt;
  return static_cast<double>(bytes) / static_cast<double>(context_.device_memory_bytes);
}

PerfFacts PerfMonitor::facts(const PhaseTotals& phases, const SourceTimes& sources, const RankSums& ranks, double images_per_s,
                             double tflops, std::optional<double> memory_fraction, bool whole_run) const {
  PerfFacts f;
  f.phases = phases;
  if (context_.world_size > 1) f.least_comm_fraction = ranks.least_comm_fraction();
  f.images_per_s = images_per_s;
  f.world_size = context_.world_size;
  f.local_world_size = context_.local_world_size;
  f.gradient_mb = context_.gradient_mb;
  f.cores = context_.cores;
  f.on_gpu = context_.on_gpu;
  f.gpu_has_fast_bf16 = context_.gpu_has_fast_bf16;
  f.peak_tflops = context_.peak_tflops;
  f.tflops = tflops;
  f.memory_fraction = memory_fraction;
  f.straggler = stragglers_.worst();
  f.rank_labels = context_.rank_labels;
  if (whole_run && ranks.steps > 0)
    for (PhaseSeconds r : ranks.seconds) {
      for (double& s : r.seconds) s /= static_cast<double>(ranks.steps);
      f.rank_means.push_back(r);
    }
  if (whole_run) f.outliers = outliers_;
  // Below a quarter second of the workers' time the shares are noise.
  if (sources.read_s + sources.decode_s >= 0.25) f.read_share = sources.read_s / (sources.read_s + sources.decode_s);
  if (sources.samples >= kFewestSamplesForShare)
    f.progressive_share = static_cast<double>(sources.progressive) / static_cast<double>(sources.samples);
  if (sources.launch_phases > 0) f.gpu_drained = static_cast<double>(sources.launch_drained) / static_cast<double>(sources.launch_phases);
  f.epoch_peak_mb = epoch_peaks_;
  f.first_peak_epoch = first_peak_epoch_;
  return f;
}

}  // namespace cvtrain
