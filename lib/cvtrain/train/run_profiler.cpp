// The profiler's hooks in the loop (see run_profiler.h).
#include "cvtrain/train/run_profiler.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "cvtrain/comm/communicator.h"
#include "cvtrain/core/cpu_budget.h"
#include "cvtrain/core/log.h"
#include "cvtrain/core/this_machine.h"
#include "cvtrain/data/sample_pipeline.h"
#include "cvtrain/launch/rank_environment.h"
#include "cvtrain/observe/device_info.h"
#include "cvtrain/observe/device_peaks.h"
#include "cvtrain/observe/memory.h"
#include "cvtrain/observe/rank_comparison.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/train/run_directory.h"
#include "cvtrain/train/step_timer.h"

namespace cvtrain {
namespace {

// "rank R (host H, GPU g)" of every rank: one all-gather of each rank's host name and GPU.
std::vector<std::string> gather_rank_labels(const RankInfo& rank, const c10::Device& device, Communicator& comm) {
  constexpr int64_t kHostChars = 64, kRow = kHostChars + 1;
  char host[kHostChars] = {};
  std::snprintf(host, kHostChars, "%s", host_name().c_str());
  at::Tensor mine = at::zeros({kRow}, at::TensorOptions(device).dtype(at::kDouble));
  at::Tensor row = at::zeros({kRow}, at::kDouble);
  for (int64_t i = 0; i < kHostChars; ++i) row[i] = static_cast<double>(static_cast<unsigned char>(host[i]));
  row[kHostChars] = device.is_cuda() ? static_cast<double>(device.index()) : -1.0;
  mine.copy_(row);
  at::Tensor all = at::zeros({rank.world_size * kRow}, mine.options());
  if (rank.world_size > 1)
    comm.all_gather(all, mine, "all-gather of the ranks' host names");
  else
    all.copy_(mine);
  const at::Tensor on_host = all.cpu();
  const double* v = on_host.data_ptr<double>();
  std::vector<std::string> labels;
  for (int r = 0; r < rank.world_size; ++r) {
    std::string name;
    for (int64_t i = 0; i < kHostChars && v[r * kRow + i] != 0; ++i) name += static_cast<char>(v[r * kRow + i]);
    labels.push_back(rank_label(r, name, static_cast<int>(v[r * kRow + kHostChars])));
  }
  return labels;
}

}  // namespace

PerfContext job_perf_context(const Recipe& recipe, const RankInfo& rank, const c10::Device& device, Communicator& comm) {
  PerfContext c;
  c.world_size = rank.world_size;
  c.local_world_size = rank.local_world_size;
  c.cores = cores_for_local_ranks(process_environment(), rank.local_world_size, usable_cpus());
  c.on_gpu = device.is_cuda();
  c.device_name = device_name(device);
  c.gpu_has_fast_bf16 = c.on_gpu && has_fast_bf16(compute_capability_major(device));
  if (recipe.observe.peak_tflops > 0)
    c.peak_tflops = recipe.observe.peak_tflops;
  else if (c.on_gpu)
    c.peak_tflops = known_peak_tflops(c.device_name, recipe.precision);
  c.device_memory_bytes = device_memory_bytes(device);
  c.rank_labels = gather_rank_labels(rank, device, comm);
  return c;
}

RunProfiler::RunProfiler(const Recipe& recipe, const RunPlan& plan, PerfContext context, Communicator& comm, const c10::Device& device,
                         double flops_per_image, const InputTimings& input)
    : recipe_(recipe),
      monitor_(recipe, plan, std::move(context)),
      comm_(comm),
      device_(device),
      flops_per_image_(flops_per_image),
      input_(input),
      enabled_(recipe.observe.breakdown) {}

void RunProfiler::start_epoch(StepTimer& timer) {
  monitor_.restart_epoch();
  timer.break_sequence();  // the evaluation before this epoch is in its own record (eval_s)
}

void RunProfiler::after_step(StepTimer& timer) {
  monitor_.add_steps(timer.take_finished());
  add_sources(timer.launch_checks());
}

void RunProfiler::add_sources(const LaunchChecks& launches) {
  const int64_t read_ns = input_.read_ns.load(std::memory_order_relaxed), decode_ns = input_.decode_ns.load(std::memory_order_relaxed);
  SourceTimes delta;
  delta.read_s = static_cast<double>(read_ns - std::exchange(seen_read_ns_, read_ns)) / 1e9;
  delta.decode_s = static_cast<double>(decode_ns - std::exchange(seen_decode_ns_, decode_ns)) / 1e9;
  const int64_t samples = input_.samples.load(std::memory_order_relaxed), progressive = input_.progressive.load(std::memory_order_relaxed);
  delta.samples = samples - std::exchange(seen_samples_, samples);
  delta.progressive = progressive - std::exchange(seen_progressive_, progressive);
  delta.launch_phases = launches.phases - std::exchange(seen_launch_phases_, launches.phases);
  delta.launch_drained = launches.drained - std::exchange(seen_launch_drained_, launches.drained);
  monitor_.add_sources(delta);
}

void RunProfiler::complete(int64_t epoch, TrainRecord& record) {
  record.mfu = monitor_.mfu(record.train_tflops);
  if (!enabled_) return;
  record.breakdown = monitor_.interval();
  std::optional<std::string> straggler;
  if (comm_.world_size() > 1) {
    const std::vector<RankWindow> windows = gather_windows();
    if (comm_.rank() == 0 && monitor_.interval().steps() > 0) record.ranks = monitor_.compare(windows, straggler);
  }
  if (comm_.rank() == 0) {
    if (auto warning = monitor_.interval_warning(epoch, record.images_per_s, record.train_tflops)) log::warn("{}", *warning);
    if (straggler) log::warn("{}", *straggler);
  }
  monitor_.restart_interval();
}

void RunProfiler::complete(EpochRecord& record) {
  record.breakdown = monitor_.epoch();
  monitor_.add_epoch_peak(record.epoch, record.memory.peak_mb());
}

void RunProfiler::report_epoch(const EpochRecord& record) const {
  if (!enabled_) return;
  for (const Verdict& v : monitor_.epoch_verdicts(record.images_per_s, tflops(record.images_per_s), memory_fraction()))
    log::info("epoch {}: {}", record.epoch, v.message);
}

void RunProfiler::report_run(const std::string& summary_path) const {
  const PhaseTotals& run = monitor_.run();
  if (!enabled_ || run.steps() == 0) return;
  const double images_per_s = static_cast<double>(recipe_.train.global_batch) / std::max(run.step_s(), 1e-9);
  log::info("where the step time went ({} steps, {:.3f} s each): {}", run.steps(), run.step_s(), run.describe());
  for (const Verdict& v : monitor_.run_verdicts(images_per_s, tflops(images_per_s), memory_fraction())) {
    if (v.mild)
      log::info("note: {}", v.message);
    else
      log::warn("{}", v.message);
  }
  write_file_atomically(summary_path, monitor_.summary_json(images_per_s, tflops(images_per_s), memory_fraction()));
}

// Every rank's mean phase seconds per step in this interval: one small all-gather.
std::vector<RankWindow> RunProfiler::gather_windows() {
  const RankWindow mine = monitor_.interval_window();
  const at::Tensor local = at::tensor(std::vector<double>(mine.seconds.begin(), mine.seconds.end()), at::kDouble).to(device_);
  at::Tensor all = at::zeros({comm_.world_size() * static_cast<int64_t>(kPhaseCount)}, local.options());
  comm_.all_gather(all, local, "all-gather of the step breakdown");
  const at::Tensor host = all.cpu();
  const double* values = host.data_ptr<double>();
  std::vector<RankWindow> windows(static_cast<size_t>(comm_.world_size()));
  for (size_t r = 0; r < windows.size(); ++r) std::copy_n(values + r * kPhaseCount, kPhaseCount, windows[r].seconds.begin());
  return windows;
}

std::optional<double> RunProfiler::memory_fraction() const { return monitor_.memory_fraction(peak_reserved_bytes(device_)); }

}  // namespace cvtrain
