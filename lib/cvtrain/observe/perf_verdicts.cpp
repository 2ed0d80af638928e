// The verdicts' rules and wording (see perf_verdicts.h).
#include "cvtrain/observe/perf_verdicts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "cvtrain/core/text.h"
#include "cvtrain/observe/metrics_log.h"
#include "cvtrain/recipe/augment_placement.h"
#include "cvtrain/recipe/recipe_checks.h"
#include "cvtrain/recipe/run_plan.h"

namespace cvtrain {
namespace {

constexpr double kCopyBound = 0.1;        // copies should hide behind compute entirely
constexpr double kModerateShare = 0.25;   // "moderately input-bound" from a quarter of observe.input_bound (5 % of 20 %)
constexpr double kWorkerMargin = 1.1;     // headroom over the exact rate
constexpr double kProgressiveShare = 0.05;  // progressive JPEGs worth a pack: from 5 % of those decoded

std::string percent(double fraction) { return fmt::format("{:.0f}%", 100 * fraction); }

std::optional<Verdict> storage_bound(const PerfFacts& f, const Recipe& r, const RunPlan& p, double data) {
  const double reading = *f.read_share;
  return Verdict{"storage_bound", data,
                 fmt::format("{}input-bound, by storage: {} of the step time waits for data, and the input workers spend {} of their "
                             "time reading files rather than decoding them, so more data.workers (now {}) would only queue on the "
                             "same storage; copy the data to local disk, or pack it into a few large shards that read sequentially "
                             "(`cvtrain data pack SRC DST --shards N`, with --resize {} to read fewer bytes).",
                             data >= r.observe.input_bound ? "" : "moderately ", percent(data), percent(reading), p.workers_described(),
                             r.model.image_size * 8 / 7)};
}

// Where the GPU could decode the JPEGs instead (data.decoder nvjpeg): a clause for the input-bound advice.
std::string gpu_decode_advice(const PerfFacts& f, const Recipe& r) {
  if (!f.on_gpu || !holds_encoded_files(r.data.format) || r.data.decoder == DecoderKind::kNvjpeg || augment_needing_cpu_pixels(r.augment)) return "";
  return ", or set data.decoder: nvjpeg, which decodes the JPEGs on the GPU and leaves the workers only reading";
}

// Progressive JPEGs decode whole (no crop window, no cheap DCT scaling): about 2.5x the work of a
// baseline one (docs/benchmarks.md, "Progressive JPEGs"), which `data pack` removes without changing a pixel.
std::string progressive_advice(const PerfFacts& f) {
  if (!f.progressive_share || *f.progressive_share < kProgressiveShare) return "";
  return fmt::format(
      "{} of the JPEGs decoded are progressive, which decode whole, about 2.5x slower than baseline ones: "
      "`cvtrain data pack` stores them as baseline with the same pixels; ",
      percent(*f.progressive_share));
}

std::optional<Verdict> input_bound(const PerfFacts& f, const Recipe& r, const RunPlan& p) {
  const double data = f.phases.fraction(Phase::kData);
  const double threshold = r.observe.input_bound;
  if (data < kModerateShare * threshold) return std::nullopt;
  if (f.read_share && *f.read_share >= r.observe.storage_bound) return storage_bound(f, r, p, data);
  const int64_t workers = p.workers.value_or(0);
  const int64_t needed = workers_to_keep_up(workers, data);
  const int64_t cores_per_rank = std::max<int64_t>(1, f.cores / static_cast<unsigned>(std::max(1, f.local_world_size)));
  std::string advice;
  if (needed <= cores_per_rank) {
    advice = fmt::format("data.workers: {} would keep up (now {}; this node has {} cores for {} rank{})", needed, p.workers_described(),
                         f.cores, f.local_world_size, f.local_world_size == 1 ? "" : "s");
  } else {
    const std::string use_cores = workers >= cores_per_rank
                                      ? fmt::format("data.workers (now {}) already uses", p.workers_described())
                                      : fmt::format("data.workers: {} (now {}) uses", cores_per_rank, p.workers_described());
    advice = fmt::format(
        "{} this node's {} cores per rank, but keeping up needs about {} decode workers per rank: pack the data pre-resized "
        "near model.image_size ({}) with `cvtrain data pack --resize`, so that each decode costs less{}",
        use_cores, cores_per_rank, needed, r.model.image_size, gpu_decode_advice(f, r));
  }
  const std::string decoding =
      f.read_share ? fmt::format(" (the workers spend {} of their time decoding and augmenting, {} reading)", percent(1 - *f.read_share),
                                 percent(*f.read_share))
                   : "";
  return Verdict{"input_bound", data,
                 fmt::format("{}input-bound: {} of the step time waits for data{}; {}{}.", data >= threshold ? "" : "moderately ",
                             percent(data), decoding, progressive_advice(f), advice)};
}

std::optional<Verdict> copy_bound(const PerfFacts& f, const Recipe& r) {
  const double copy = f.phases.fraction(Phase::kCopy);
  if (copy < kCopyBound) return std::nullopt;
  return Verdict{"copy_bound", copy,
                 fmt::format("copy-bound: {} of the step time waits for batches to reach the device and be normalised; "
                             "data.prefetch: {} lets copies run further ahead of the step.",
                             percent(copy), std::min<int64_t>(64, 2 * r.data.prefetch))};
}

// With the global batch kept, more accumulation only shortens the backward that hides the one
// all-reduce per step; what spreads it over more images is a larger global batch, which changes training.
std::string comm_advice_without_buckets(const BatchPlan& b) {
  return fmt::format(
      "communicate once per more images: train.accumulation: {} with train.micro_batch: {} (train.global_batch {}, "
      "twice the images per step; scale optim.lr with it)",
      2 * b.accumulation, b.micro, 2 * b.global);
}

// DDP's all-reduces run per bucket as backward fills them: gradients that fit one bucket cannot
// start before backward ends, so smaller buckets help there; with many buckets, fewer larger ones
// spend less on each collective's start.
std::string bucket_advice(const PerfFacts& f, const Recipe& r) {
  const double bucket = r.distributed.bucket_mb;
  if (f.gradient_mb > 0 && f.gradient_mb <= bucket) {
    const double smaller = std::max(0.25, std::round(f.gradient_mb) / 4);  // about four buckets, in quarter MiB
    return fmt::format("all {:.1f} MB of gradients fit one bucket of distributed.bucket_mb {:g}, so their all-reduce starts only when "
                       "backward has ended: distributed.bucket_mb: {:g} splits them into buckets that start during backward",
                       f.gradient_mb, bucket, smaller);
  }
  return fmt::format("distributed.bucket_mb: {:g} (now {:g}) starts fewer, larger all-reduces", 2 * bucket, bucket);
}

// The share quoted is the breakdown's (rank 0's, the same steps as the log line, metrics.jsonl and
// the report). Where another rank waited less than the threshold, rank 0's wait is for a slower
// rank, which the straggler verdict names, not for the network.
std::optional<Verdict> comm_bound(const PerfFacts& f, const Recipe& r, const RunPlan& p) {
  const double comm = f.phases.fraction(Phase::kComm);
  if (f.world_size < 2 || comm < r.observe.comm_bound) return std::nullopt;
  if (f.least_comm_fraction && *f.least_comm_fraction < r.observe.comm_bound) return std::nullopt;
  std::string advice = comm_advice_without_buckets(p.batch);
  if (p.strategy_traits().overlaps_in_buckets) advice = bucket_advice(f, r) + "; or " + advice;
  return Verdict{"comm_bound", comm,
                 fmt::format("communication-bound: {} of the step waits for communication that backward did not hide ({} ranks, "
                             "strategy {}); {}.",
                             percent(comm), f.world_size, name_of(p.strategy), advice)};
}

// A launch-bound step that could be captured: train.cuda_graphs replays it as one launch.
std::string graphs_advice(const Recipe& r, const RunPlan& p) {
  const bool host_decides = uses_trust_ratio(r.optim.name) || p.optimizer_path == OptimImplementation::kForeach;
  if (r.train.cuda_graphs || p.strategy_traits().gathers_in_step || host_decides) return "";
  return "; or train.cuda_graphs: true replays the whole step as one CUDA graph, one launch instead of thousands";
}

std::optional<Verdict> host_bound(const PerfFacts& f, const Recipe& r, const RunPlan& p) {
  const double data = f.phases.fraction(Phase::kData);
  if (!f.on_gpu || !f.gpu_drained || *f.gpu_drained < r.observe.launch_bound || data >= kModerateShare * r.observe.input_bound)
    return std::nullopt;
  return Verdict{"host_bound", *f.gpu_drained,
                 fmt::format("host/launch-bound: in {} of the forward, backward and optimizer phases the GPU had finished all its work "
                             "before the host issued the next, while data waits are only {}: the GPU idles between kernel launches. "
                             "A larger train.micro_batch (now {}) gives every launch more work to hide the host's time behind{}.",
                             percent(*f.gpu_drained), percent(data), p.batch.micro, graphs_advice(r, p))};
}

std::optional<Verdict> memory_growth(const PerfFacts& f, const Recipe& r) {
  const std::vector<double>& peaks = f.epoch_peak_mb;
  if (peaks.size() < 3 || peaks[1] <= 0) return std::nullopt;
  for (size_t e = 2; e < peaks.size(); ++e)
    if (!(peaks[e] > peaks[e - 1])) return std::nullopt;  // a plateau is an allocator that settled, not growth
  // Below kMinGrowthMb a rise is a small run's allocator and threads settling (a CPU run 100 MB above
  // its start can gain tens of MB from one epoch to the next on a loaded machine), not a leak.
  constexpr double kMinGrowthMb = 64;
  const double growth = peaks.back() / peaks[1] - 1;
  if (growth < r.observe.memory_growth || peaks.back() - peaks[1] < kMinGrowthMb) return std::nullopt;
  return Verdict{"memory_growth", growth,
                 fmt::format("memory growth: the peak memory rose in every epoch since epoch {}, from {:.0f} MB to {:.0f} MB (+{}) after "
                             "epoch {}; something keeps memory from one step to the next (tensors held in a list, a growing cache), and "
                             "at this rate the run ends out of memory.",
                             f.first_peak_epoch + 1, peaks[1], peaks.back(), percent(growth),
                             f.first_peak_epoch + static_cast<int64_t>(peaks.size()) - 1)};
}

std::optional<Verdict> straggler(const PerfFacts& f) {
  if (!f.straggler) return std::nullopt;
  const StragglerFinding& s = *f.straggler;
  const std::string who = s.rank < static_cast<int>(f.rank_labels.size()) ? f.rank_labels[s.rank] : fmt::format("rank {}", s.rank);
  if (!s.chronic)
    return Verdict{"stall", s.score,
                   fmt::format("one-off stall: {} ran at {:.2f} of the fastest rank's speed for {} logging window{}, most of it in {}; "
                               "not repeated, so nothing to change unless it comes back.",
                               who, s.score, s.windows_in_row, s.windows_in_row == 1 ? "" : "s", phase_name(s.phase)),
                   true};
  return Verdict{"straggler", s.score,
                 fmt::format("straggler: {} ran at {:.2f} of the fastest rank's speed for {} logging windows in a row, most of its extra "
                             "time in {}; every other rank waits for it. Look at that host (other processes, clocks, thermals{}) or leave "
                             "it out of the job.",
                             who, s.score, s.windows_in_row, phase_name(s.phase),
                             s.phase == Phase::kData ? ", its storage and cores" : "")};
}

std::optional<Verdict> step_outliers(const PerfFacts& f, const Recipe& r) {
  const StepOutliers& o = f.outliers;
  if (o.count() == 0) return std::nullopt;
  std::string cause = "; their extra time lies inside the step";
  if (o.longest_streak() >= kSlowdownStreak)
    cause = fmt::format(
        "; {} of them in a row from step {}, slow inside the step: the steps themselves slowed "
        "down, as when another process takes this machine's cores or GPU, or clocks are throttled (heat, power), "
        "not extra work of the run's: look at what else ran on the host then",
        o.longest_streak(), o.longest_streak_start());
  else if (o.between_steps() > 0)
    cause = fmt::format("; {} of them between steps (checkpoints, evaluation, logging): checkpoint.every_steps (now {}) and "
                        "checkpoint.every_minutes (now {:g}) set how often that happens",
                        o.between_steps(), r.checkpoint.every_steps, r.checkpoint.every_minutes);
  return Verdict{"step_outliers", static_cast<double>(o.count()),
                 fmt::format("step outliers: {} step{} took longer than mean + 3 sigma (the longest {:.3f} s against a mean of {:.3f} s), "
                             "{:.1f} s beyond the mean in all, {:.1f}% of the step time{}.",
                             o.count(), o.count() == 1 ? "" : "s", o.longest_s(), o.mean_s(), o.excess_s(), 100 * o.excess_share(), cause),
                 o.excess_share() < kMildOutlierShare};
}

std::optional<Verdict> memory_pressure(const PerfFacts& f, const Recipe& r, const RunPlan& p) {
  if (!f.memory_fraction || *f.memory_fraction < r.observe.memory_pressure) return std::nullopt;
  const std::string recompute = r.model.grad_checkpointing ? "" : "model.grad_checkpointing: true or ";
  return Verdict{"memory_pressure", *f.memory_fraction,
                 fmt::format("memory pressure: the peak reserved memory is {} of the device; {}a smaller train.micro_batch (now {}) "
                             "leaves room and keeps the allocator from retrying.",
                             percent(*f.memory_fraction), recompute, p.batch.micro)};
}

std::optional<Verdict> precision(const PerfFacts& f, const RunPlan& p) {
  if (!f.on_gpu || !f.gpu_has_fast_bf16 || p.precision.autocast() != AutocastType::kNone) return std::nullopt;
  return Verdict{"precision", 0,
                 fmt::format("precision {} on a GPU with fast bf16: precision: bf16 runs matmuls and convolutions on tensor cores at "
                             "several times the rate.",
                             p.precision.name())};
}

}  // namespace

void StepOutliers::count_streak(bool slow_inside) {
  if (!slow_inside) {
    streak_ = 0;
    return;
  }
  if (streak_++ == 0) streak_start_ = seen_;
  if (streak_ > longest_streak_) {
    longest_streak_ = streak_;
    longest_streak_start_ = streak_start_;
  }
}

void StepOutliers::add(const PhaseSeconds& step) {
  if (++seen_ <= kWarmupSteps) return;
  const double t = step.total();
  total_s_ += t;
  if (samples_ >= kMinSamples) {
    const double sigma = std::sqrt(m2_ / static_cast<double>(samples_ - 1));
    if (t > mean_ + 3 * sigma) {
      ++count_;
      excess_s_ += t - mean_;
      longest_s_ = std::max(longest_s_, t);
      const bool between = step[Phase::kOther] >= 0.5 * (t - mean_);  // most of the excess lies between steps
      between_steps_ += between ? 1 : 0;
      count_streak(!between);
      return;  // an outlier does not move the baseline it is judged against
    }
  }
  count_streak(false);
  ++samples_;
  const double delta = t - mean_;
  mean_ += delta / static_cast<double>(samples_);
  m2_ += delta * (t - mean_);
}

int64_t workers_to_keep_up(int64_t workers, double data_fraction) {
  const double busy = std::max(0.05, 1 - data_fraction);
  // Without workers the step decodes itself: its data time must move into workers running beside it.
  const double exact = workers > 0 ? static_cast<double>(workers) / busy : data_fraction / busy;
  return std::max<int64_t>(workers + 1, static_cast<int64_t>(std::ceil(kWorkerMargin * exact)));
}

std::vector<Verdict> perf_verdicts(const PerfFacts& facts, const Recipe& recipe, const RunPlan& plan) {
  std::vector<Verdict> verdicts;
  for (auto v : {input_bound(facts, recipe, plan), copy_bound(facts, recipe), comm_bound(facts, recipe, plan),
                 host_bound(facts, recipe, plan), straggler(facts), step_outliers(facts, recipe), memory_pressure(facts, recipe, plan),
                 memory_growth(facts, recipe), precision(facts, plan)})
    if (v) verdicts.push_back(std::move(*v));
  return verdicts;
}

std::string perf_summary_json(const PerfFacts& f, const std::vector<Verdict>& verdicts) {
  MetricRecord fractions, seconds;
  for (size_t i = 0; i < kPhaseCount; ++i) {
    fractions.emplace_back(kPhaseNames[i], f.phases.fraction(static_cast<Phase>(i)));
    seconds.emplace_back(kPhaseNames[i], f.phases.mean_s(static_cast<Phase>(i)));
  }
  MetricRecord utilisation{{"steps", f.phases.steps()}, {"step_s", f.phases.step_s()}, {"images_per_s", f.images_per_s},
                           {"tflops", f.tflops}};
  if (f.peak_tflops) {
    utilisation.emplace_back("peak_tflops", *f.peak_tflops);
    utilisation.emplace_back("mfu", f.tflops / *f.peak_tflops);
  }
  if (f.memory_fraction) utilisation.emplace_back("memory_fraction", *f.memory_fraction);
  std::string straggler = "null";
  if (f.straggler)
    straggler = to_json(MetricRecord{{"rank", static_cast<int64_t>(f.straggler->rank)},
                                     {"label", f.straggler->rank < static_cast<int>(f.rank_labels.size()) ? f.rank_labels[f.straggler->rank]
                                                                                                          : std::string()},
                                     {"score", f.straggler->score},
                                     {"phase", std::string(phase_name(f.straggler->phase))},
                                     {"windows_in_row", f.straggler->windows_in_row}});
  if (f.straggler) straggler.insert(straggler.size() - 1, f.straggler->chronic ? ", \"chronic\": true" : ", \"chronic\": false");
  std::string ranks;
  double fastest_own = 0;
  for (const PhaseSeconds& r : f.rank_means) fastest_own = fastest_own == 0 ? own_seconds(r) : std::min(fastest_own, own_seconds(r));
  for (size_t r = 0; r < f.rank_means.size(); ++r) {
    MetricRecord row{{"rank", static_cast<int64_t>(r)},
                     {"label", r < f.rank_labels.size() ? f.rank_labels[r] : std::string()},
                     {"step_s", f.rank_means[r].total()},
                     {"own_s", own_seconds(f.rank_means[r])},
                     {"score", own_seconds(f.rank_means[r]) > 0 ? fastest_own / own_seconds(f.rank_means[r]) : 1.0}};
    for (size_t p = 0; p < kPhaseCount; ++p) row.emplace_back(kPhaseNames[p], f.rank_means[r].seconds[p]);
    ranks += (ranks.empty() ? "\n    " : ",\n    ") + to_json(row);
  }
  std::string list;
  for (const Verdict& v : verdicts)
    list += (list.empty() ? "" : ",\n    ") +
            to_json(MetricRecord{
                {"kind", v.kind}, {"value", v.value}, {"message", v.message}, {"severity", std::string(v.mild ? "note" : "warning")}});
  return fmt::format(
      "{{\n  \"breakdown\": {},\n  \"breakdown_s\": {},\n  \"utilisation\": {},\n  \"straggler\": {},\n  \"ranks\": [{}{}],\n"
      "  \"verdicts\": [{}{}]\n}}\n",
      to_json(fractions), to_json(seconds), to_json(utilisation), straggler, ranks, ranks.empty() ? "" : "\n  ",
      list.empty() ? "" : "\n    ", list.empty() ? "" : list + "\n  ");
}

}  // namespace cvtrain
