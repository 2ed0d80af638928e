// The profiler's torch-free parts: phase arithmetic, the rank comparison and the straggler rule,
// step outliers, the verdicts with their advice, perf_summary.json and the table of GPU peaks.
#include <catch2/catch.hpp>

#include "cvtrain/observe/device_peaks.h"
#include "cvtrain/observe/perf_monitor.h"
#include "cvtrain/observe/perf_verdicts.h"
#include "cvtrain/observe/rank_comparison.h"
#include "cvtrain/observe/step_phases.h"
#include "cvtrain/recipe/run_plan.h"

using namespace cvtrain;

namespace {

// The verdicts for a run of `recipe` as its plan resolves it on the facts' ranks.
std::vector<Verdict> perf_verdicts(const PerfFacts& facts, const Recipe& recipe) {
  return cvtrain::perf_verdicts(facts, recipe, RunPlan::of(recipe, facts.world_size));
}

PhaseSeconds step_of(double data, double forward, double backward, double comm, double other = 0) {
  PhaseSeconds s;
  s[Phase::kData] = data;
  s[Phase::kForward] = forward;
  s[Phase::kBackward] = backward;
  s[Phase::kComm] = comm;
  s[Phase::kOther] = other;
  return s;
}

bool has_verdict(const std::vector<Verdict>& verdicts, const std::string& kind) {
  for (const auto& v : verdicts)
    if (v.kind == kind) return true;
  return false;
}

const Verdict& verdict(const std::vector<Verdict>& verdicts, const std::string& kind) {
  for (const auto& v : verdicts)
    if (v.kind == kind) return v;
  FAIL("no verdict " << kind);
  return verdicts.front();
}

// Facts of a compute-bound run whose outlier watch has seen `steady` steps of about 0.3 s.
PerfFacts steady_facts(int steady) {
  PerfFacts facts;
  facts.cores = 8;
  for (int i = 0; i < 4; ++i) facts.phases.add_step(step_of(0.001, 0.3, 0.6, 0.0));
  for (int i = 0; i < steady; ++i) facts.outliers.add(step_of(0, 0.1 + 0.001 * (i % 3), 0.2, 0));
  return facts;
}

}  // namespace

TEST_CASE("phase totals give per-step means and fractions that add up to one", "[observe]") {
  PhaseTotals totals;
  CHECK(totals.fraction(Phase::kData) == 0);
  totals.add_step(step_of(0.1, 0.2, 0.6, 0.1));
  totals.add_step(step_of(0.3, 0.2, 0.6, 0.1, 0.8));
  CHECK(totals.steps() == 2);
  CHECK(totals.step_s() == Approx(1.5));
  CHECK(totals.mean_s(Phase::kData) == Approx(0.2));
  CHECK(totals.fraction(Phase::kBackward) == Approx(1.2 / 3.0));
  double sum = 0;
  for (size_t p = 0; p < kPhaseCount; ++p) sum += totals.fraction(static_cast<Phase>(p));
  CHECK(sum == Approx(1.0));
  CHECK(totals.largest() == Phase::kBackward);
  CHECK(totals.describe() == "data 13% copy 0% forward 13% backward 40% comm 7% optimizer 0% other 27%");
}

TEST_CASE("the rank comparison scores own work, not the waits the fast ranks spend in collectives", "[observe]") {
  // Rank 1 is slow in forward; ranks 0 and 2 wait for it in communication, so whole steps match.
  const std::vector<RankWindow> ranks{step_of(0.01, 0.10, 0.20, 0.20), step_of(0.01, 0.30, 0.20, 0.0), step_of(0.01, 0.11, 0.20, 0.19)};
  const RankComparison c = compare_ranks(ranks);
  CHECK(c.slowest == 1);
  CHECK(c.slow_phase == Phase::kForward);
  CHECK(c.scores[0] == Approx(1.0));
  CHECK(c.scores[1] == Approx(0.31 / 0.51));
  CHECK(c.phases[static_cast<size_t>(Phase::kForward)].median == Approx(0.11));
  CHECK(c.phases[static_cast<size_t>(Phase::kComm)].max == Approx(0.20));
  CHECK(c.own.max == Approx(0.51));
}

TEST_CASE("a straggler in several windows in a row is chronic, one window is a stall", "[observe]") {
  const std::vector<RankWindow> even{step_of(0.01, 0.1, 0.2, 0.01), step_of(0.01, 0.1, 0.2, 0.01)};
  const std::vector<RankWindow> rank1_slow{step_of(0.01, 0.1, 0.2, 0.3), step_of(0.01, 0.4, 0.2, 0.0)};
  StragglerWatch watch(0.85, 3);
  CHECK_FALSE(watch.observe(compare_ranks(even)));
  const auto once = watch.observe(compare_ranks(rank1_slow));
  REQUIRE(once);
  CHECK(once->rank == 1);
  CHECK_FALSE(once->chronic);
  CHECK_FALSE(watch.observe(compare_ranks(even)));  // the run of windows starts over
  for (int i = 0; i < 2; ++i) CHECK_FALSE(watch.observe(compare_ranks(rank1_slow))->chronic);
  const auto third = watch.observe(compare_ranks(rank1_slow));
  CHECK(third->chronic);
  CHECK(third->windows_in_row == 3);
  CHECK(watch.worst()->windows_in_row == 3);
  CHECK(rank_label(1, "node-7", 1) == "rank 1 (host node-7, GPU 1)");
  CHECK(rank_label(0, "node-7", -1) == "rank 0 (host node-7)");
}

TEST_CASE("steps above mean + 3 sigma after warm-up are outliers, told apart by where the time went", "[observe]") {
  StepOutliers outliers;
  for (int i = 0; i < 30; ++i) outliers.add(step_of(0, 0.1 + 0.001 * (i % 3), 0.2, 0));
  CHECK(outliers.count() == 0);
  outliers.add(step_of(0, 0.1, 0.2, 0, 2.0));  // a checkpoint after the step
  outliers.add(step_of(0, 1.5, 0.2, 0));       // a stall inside it
  CHECK(outliers.count() == 2);
  CHECK(outliers.between_steps() == 1);
  CHECK(outliers.longest_s() == Approx(2.3));
  CHECK(outliers.mean_s() == Approx(0.301).epsilon(0.01));
  // What they cost: (2.3 - 0.301) + (1.7 - 0.301) s beyond the mean, of 25 steps of ~0.301 s and the two.
  CHECK(outliers.excess_s() == Approx(3.398).epsilon(0.01));
  CHECK(outliers.excess_share() == Approx(3.398 / (25 * 0.301 + 4.0)).epsilon(0.01));
}

TEST_CASE("outliers that stay, slow inside the step, are told as the machine slowing down from a step", "[observe]") {
  Recipe recipe;
  PerfFacts facts = steady_facts(100);
  facts.outliers.add(step_of(0, 1.0, 0.2, 0));  // one stall, then normal steps: no streak
  for (int i = 0; i < 10; ++i) facts.outliers.add(step_of(0, 0.1, 0.2, 0));
  for (int i = 0; i < 30; ++i) facts.outliers.add(step_of(0, 0.4, 0.8, 0));  // another job took the cores: from step 112 on
  CHECK(facts.outliers.count() == 31);
  CHECK(facts.outliers.longest_streak() == 30);
  CHECK(facts.outliers.longest_streak_start() == 112);
  const Verdict slowdown = verdict(perf_verdicts(facts, recipe), "step_outliers");
  CHECK_THAT(slowdown.message, Catch::Contains("30 of them in a row from step 112, slow inside the step") &&
                                   Catch::Contains("the steps themselves slowed down"));
  facts.outliers.starts_after(1000);  // resumed at step 1000: the run's own step numbers
  CHECK(facts.outliers.longest_streak_start() == 1112);
}

TEST_CASE("outliers that cost a run under 1% of its time are a note, not a warning, and so is a stall", "[observe]") {
  Recipe recipe;
  PerfFacts facts = steady_facts(2000);
  facts.outliers.add(step_of(0, 0.1, 0.2, 0, 0.5));  // one slow log write in 2000 steps: ~0.08% of the time
  const Verdict noise = verdict(perf_verdicts(facts, recipe), "step_outliers");
  CHECK(noise.mild);
  CHECK_THAT(perf_summary_json(facts, {noise}), Catch::Contains("\"severity\": \"note\""));
  for (int i = 0; i < 20; ++i) facts.outliers.add(step_of(0, 0.1, 0.2, 0, 3.0));  // checkpoints: ~10% of the time
  const Verdict costly = verdict(perf_verdicts(facts, recipe), "step_outliers");
  CHECK_FALSE(costly.mild);
  CHECK_THAT(costly.message, Catch::Contains("21 steps") && Catch::Contains("checkpoint.every_steps"));
  CHECK_THAT(perf_summary_json(facts, {costly}), Catch::Contains("\"severity\": \"warning\""));
  CHECK_THAT(costly.message, !Catch::Contains("in a row"));  // checkpoints, however many: work between steps
  facts.straggler = StragglerFinding{1, 0.6, Phase::kForward, 1, false};
  CHECK(verdict(perf_verdicts(facts, recipe), "stall").mild);
}

TEST_CASE("workers to keep up come from the measured wait", "[observe]") {
  CHECK(workers_to_keep_up(2, 0.5) == 5);   // 2 / 0.5 = 4, with 10 % headroom
  CHECK(workers_to_keep_up(4, 0.05) == 5);  // always at least one more than now
  CHECK(workers_to_keep_up(0, 0.9) == 10);  // on the training thread: 0.9 / 0.1 = 9 workers' worth
}

TEST_CASE("verdicts name the number and the recipe keys to change", "[observe]") {
  Recipe recipe;
  recipe.data.workers = WorkerCount::exactly(2);
  recipe.strategy = StrategyKind::kDdp;
  recipe.train.global_batch = 64;
  recipe.train.micro_batch = 32;
  recipe.train.accumulation = 1;
  PerfFacts facts;
  facts.gradient_mb = 97.5;  // ResNet-50's: four buckets of 25 MiB
  facts.cores = 16;
  facts.world_size = 2;
  facts.local_world_size = 2;
  for (int i = 0; i < 10; ++i) facts.phases.add_step(step_of(0.5, 0.1, 0.2, 0.3));
  const std::vector<Verdict> verdicts = perf_verdicts(facts, recipe);
  const Verdict& input = verdict(verdicts, "input_bound");
  CHECK(input.value == Approx(0.5 / 1.1));
  CHECK_THAT(input.message, Catch::StartsWith("input-bound: 45% of the step time waits for data") &&
                                Catch::Contains("data.workers: 5 would keep up (now 2; this node has 16 cores for 2 ranks)"));
  CHECK_THAT(verdict(verdicts, "comm_bound").message,
             Catch::Contains("27% of the step waits") && Catch::Contains("distributed.bucket_mb: 50 (now 25)") &&
                 Catch::Contains("train.accumulation: 2 with train.micro_batch: 32 (train.global_batch 128"));
  facts.gradient_mb = 2.4;  // a small model: one bucket, whose all-reduce cannot start before backward ends
  CHECK_THAT(verdict(perf_verdicts(facts, recipe), "comm_bound").message,
             Catch::Contains("all 2.4 MB of gradients fit one bucket of distributed.bucket_mb 25") &&
                 Catch::Contains("distributed.bucket_mb: 0.5 splits them"));
  facts.gradient_mb = 97.5;
  CHECK_FALSE(has_verdict(verdicts, "precision"));  // not on a GPU

  SECTION("more workers than cores: pack the data pre-resized") {
    facts.cores = 4;
    CHECK_THAT(verdict(perf_verdicts(facts, recipe), "input_bound").message,
               Catch::Contains("data.workers (now 2) already uses this node's 2 cores per rank") && Catch::Contains("cvtrain data pack --resize"));
    CHECK_THAT(verdict(perf_verdicts(facts, recipe), "input_bound").message, !Catch::Contains("data.decoder"));  // idx data, no GPU
    facts.on_gpu = true;
    recipe.data.format = DataFormat::kImageFolder;
    CHECK_THAT(verdict(perf_verdicts(facts, recipe), "input_bound").message, Catch::Contains("or set data.decoder: nvjpeg"));
    recipe.augment.color_jitter = 0.4;  // the GPU would have no pixels to jitter
    CHECK_THAT(verdict(perf_verdicts(facts, recipe), "input_bound").message, !Catch::Contains("data.decoder"));
  }
  SECTION("thresholds come from the recipe") {
    recipe.observe.comm_bound = 0.5;
    CHECK_FALSE(has_verdict(perf_verdicts(facts, recipe), "comm_bound"));
  }
  SECTION("fp32 on a GPU with bf16, memory pressure, a chronic straggler") {
    facts.on_gpu = facts.gpu_has_fast_bf16 = true;
    facts.memory_fraction = 0.95;
    facts.straggler = StragglerFinding{1, 0.6, Phase::kForward, 4, true};
    facts.rank_labels = {rank_label(0, "a", 0), rank_label(1, "b", 1)};
    const std::vector<Verdict> more = perf_verdicts(facts, recipe);
    CHECK_THAT(verdict(more, "precision").message, Catch::Contains("precision: bf16"));
    CHECK_THAT(verdict(more, "memory_pressure").message, Catch::Contains("95%") && Catch::Contains("model.grad_checkpointing: true"));
    CHECK_THAT(verdict(more, "straggler").message, Catch::StartsWith("straggler: rank 1 (host b, GPU 1) ran at 0.60") &&
                                                       Catch::Contains("4 logging windows in a row") && Catch::Contains("in forward"));
  }
}

TEST_CASE("an input-bound run whose workers mostly read files is storage-bound, not short of workers", "[observe]") {
  Recipe recipe;
  recipe.data.workers = WorkerCount::exactly(4);
  PerfFacts facts;
  facts.cores = 16;
  for (int i = 0; i < 10; ++i) facts.phases.add_step(step_of(0.5, 0.2, 0.3, 0.0));
  facts.read_share = 0.7;
  const std::vector<Verdict> reading = perf_verdicts(facts, recipe);
  CHECK_FALSE(has_verdict(reading, "input_bound"));
  CHECK_THAT(verdict(reading, "storage_bound").message,
             Catch::StartsWith("input-bound, by storage: 50% of the step time waits for data, and the input workers spend 70%") &&
                 Catch::Contains("more data.workers (now 4) would only queue") && Catch::Contains("cvtrain data pack"));
  facts.read_share = 0.2;
  const std::vector<Verdict> decoding = perf_verdicts(facts, recipe);
  CHECK_FALSE(has_verdict(decoding, "storage_bound"));
  CHECK_THAT(verdict(decoding, "input_bound").message,
             Catch::Contains("(the workers spend 80% of their time decoding and augmenting, 20% reading)") &&
                 Catch::Contains("data.workers: 9 would keep up"));
  recipe.observe.storage_bound = 0.1;  // the threshold is the recipe's
  CHECK(has_verdict(perf_verdicts(facts, recipe), "storage_bound"));
}

TEST_CASE("an input-bound run on progressive JPEGs is told that a pack stores them as baseline", "[observe]") {
  Recipe recipe;
  recipe.data.workers = WorkerCount::exactly(2);
  PerfContext context;
  context.cores = 16;
  const RunPlan plan = RunPlan::of(recipe, context.world_size);
  PerfMonitor monitor(recipe, plan, context);
  for (int i = 0; i < 10; ++i) monitor.add_steps({step_of(0.5, 0.2, 0.3, 0.0)});
  SourceTimes few;  // under a hundred samples the share is not told
  few.read_s = 0.1;
  few.decode_s = 2.0;
  few.samples = 60;
  few.progressive = 60;
  monitor.add_sources(few);
  CHECK_THAT(verdict(monitor.run_verdicts(100, 0, std::nullopt), "input_bound").message, !Catch::Contains("progressive"));
  SourceTimes more = few;
  more.samples = 940;
  more.progressive = 240;  // 300 of 1,000
  monitor.add_sources(more);
  const std::string message = verdict(monitor.run_verdicts(100, 0, std::nullopt), "input_bound").message;
  CHECK_THAT(message, Catch::Contains("; 30% of the JPEGs decoded are progressive, which decode whole") &&
                          Catch::Contains("`cvtrain data pack` stores them as baseline with the same pixels; data.workers: "));
  SourceTimes baseline;  // a few percent is not worth a pack
  baseline.samples = 9000;
  monitor.add_sources(baseline);
  CHECK_THAT(verdict(monitor.run_verdicts(100, 0, std::nullopt), "input_bound").message, !Catch::Contains("progressive"));
}

TEST_CASE("a GPU that runs dry between launches without waiting for data is host-bound", "[observe]") {
  Recipe recipe;
  recipe.train.micro_batch = 16;
  PerfFacts facts;
  facts.on_gpu = true;
  for (int i = 0; i < 10; ++i) facts.phases.add_step(step_of(0.001, 0.2, 0.3, 0.0));
  facts.gpu_drained = 0.8;
  CHECK_THAT(verdict(perf_verdicts(facts, recipe), "host_bound").message,
             Catch::StartsWith("host/launch-bound: in 80% of the forward, backward and optimizer phases") &&
                 Catch::Contains("train.micro_batch (now 16)") && Catch::Contains("train.cuda_graphs: true replays the whole step"));
  recipe.optim.name = OptimizerKind::kLamb;  // decides on the host: no graph to suggest
  CHECK_THAT(verdict(perf_verdicts(facts, recipe), "host_bound").message, !Catch::Contains("cuda_graphs"));
  recipe.optim.name = OptimizerKind::kSgd;
  recipe.train.cuda_graphs = true;  // already captured
  CHECK_THAT(verdict(perf_verdicts(facts, recipe), "host_bound").message, !Catch::Contains("cuda_graphs"));
  facts.gpu_drained = 0.3;
  CHECK_FALSE(has_verdict(perf_verdicts(facts, recipe), "host_bound"));
  recipe.observe.launch_bound = 0.25;
  CHECK(has_verdict(perf_verdicts(facts, recipe), "host_bound"));
  // Waiting for data, the GPU runs dry for that reason: the input verdict says it, not this one.
  PerfFacts starved = facts;
  starved.phases.restart();
  for (int i = 0; i < 10; ++i) starved.phases.add_step(step_of(0.4, 0.2, 0.3, 0.0));
  CHECK_FALSE(has_verdict(perf_verdicts(starved, recipe), "host_bound"));
  facts.on_gpu = false;  // a CPU has no queue to run dry
  CHECK_FALSE(has_verdict(perf_verdicts(facts, recipe), "host_bound"));
}

TEST_CASE("peak memory rising in every epoch since the second is growth, a plateau is not", "[observe]") {
  Recipe recipe;
  PerfFacts facts;
  for (int i = 0; i < 4; ++i) facts.phases.add_step(step_of(0.001, 0.3, 0.6, 0.0));
  facts.epoch_peak_mb = {900, 1000, 1080, 1150};
  const std::vector<Verdict> grown = perf_verdicts(facts, recipe);
  const Verdict& growth = verdict(grown, "memory_growth");
  CHECK(growth.value == Approx(0.15));
  CHECK_THAT(growth.message, Catch::StartsWith("memory growth: the peak memory rose in every epoch since epoch 2, from 1000 MB to 1150 MB "
                                               "(+15%) after epoch 4"));
  facts.epoch_peak_mb = {900, 1000, 1150, 1150};  // settled
  CHECK_FALSE(has_verdict(perf_verdicts(facts, recipe), "memory_growth"));
  facts.epoch_peak_mb = {900, 1000, 1040, 1080};  // +8%, below observe.memory_growth
  CHECK_FALSE(has_verdict(perf_verdicts(facts, recipe), "memory_growth"));
  recipe.observe.memory_growth = 0.03;
  CHECK(has_verdict(perf_verdicts(facts, recipe), "memory_growth"));
  facts.epoch_peak_mb = {90, 100, 110, 120};  // +20%, but 20 MB: a small run settling, not a leak
  CHECK_FALSE(has_verdict(perf_verdicts(facts, recipe), "memory_growth"));
  // A run resumed at epoch 7 counts from its own second epoch.
  facts.epoch_peak_mb = {900, 1000, 1080, 1150};
  facts.first_peak_epoch = 7;
  const std::vector<Verdict> resumed = perf_verdicts(facts, recipe);
  CHECK_THAT(verdict(resumed, "memory_growth").message, Catch::Contains("since epoch 8, from 1000 MB") && Catch::Contains("after epoch 10"));
  facts.epoch_peak_mb = {900, 2000};  // two epochs say nothing yet
  CHECK_FALSE(has_verdict(perf_verdicts(facts, recipe), "memory_growth"));
}

TEST_CASE("a quiet run gets no verdicts, and perf_summary.json holds the breakdown", "[observe]") {
  Recipe recipe;
  PerfFacts facts;
  facts.cores = 8;
  for (int i = 0; i < 4; ++i) facts.phases.add_step(step_of(0.001, 0.3, 0.6, 0.0, 0.01));
  facts.peak_tflops = 100;
  facts.tflops = 25;
  const std::vector<Verdict> none = perf_verdicts(facts, recipe);
  CHECK(none.empty());
  const std::string json = perf_summary_json(facts, none);
  CHECK_THAT(json, Catch::Contains("\"breakdown\": {\"data\": ") && Catch::Contains("\"mfu\": 0.25") &&
                       Catch::Contains("\"straggler\": null") && Catch::Contains("\"verdicts\": []"));
}

TEST_CASE("known GPUs have dense peaks per precision, unknown ones and CPUs none", "[observe]") {
  CHECK(known_peak_tflops("NVIDIA H200", Precision::kBf16) == 989);
  CHECK(known_peak_tflops("NVIDIA H100 80GB HBM3", Precision::kFp16) == 989);
  CHECK(known_peak_tflops("NVIDIA H100 PCIe", Precision::kBf16) == 756);
  CHECK(known_peak_tflops("NVIDIA A100-SXM4-80GB", Precision::kBf16) == 312);
  CHECK(known_peak_tflops("NVIDIA A100-SXM4-80GB", Precision::kTf32) == 156);
  CHECK(known_peak_tflops("NVIDIA A10", Precision::kBf16) == 125);
  CHECK(known_peak_tflops("NVIDIA L40S", Precision::kBf16) == 362);
  CHECK(known_peak_tflops("NVIDIA L4", Precision::kBf16) == 121);
  CHECK_FALSE(known_peak_tflops("cpu", Precision::kFp32));
  CHECK_FALSE(known_peak_tflops("Some Future GPU", Precision::kBf16));
  CHECK(has_fast_bf16(8));
  CHECK_FALSE(has_fast_bf16(7));
}

TEST_CASE("the monitor says an input-bound interval once per epoch and compares ranks", "[observe]") {
  Recipe recipe;
  recipe.data.workers = WorkerCount::exactly(1);
  PerfContext context;
  context.world_size = 2;
  context.cores = 8;
  context.rank_labels = {rank_label(0, "h", -1), rank_label(1, "h", -1)};
  const RunPlan plan = RunPlan::of(recipe, context.world_size);
  PerfMonitor monitor(recipe, plan, context);
  monitor.add_steps({step_of(0.4, 0.1, 0.2, 0.5), step_of(0.4, 0.1, 0.2, 0.5), step_of(0.4, 0.1, 0.2, 0.5)});
  CHECK(monitor.interval().steps() == 3);  // the fewest a window needs to count for the straggler watch
  CHECK(monitor.interval_window()[Phase::kData] == Approx(0.4));
  const auto said = monitor.interval_warning(0, 100, 0);
  REQUIRE(said);
  CHECK_THAT(*said, Catch::StartsWith("input-bound: 33%") && Catch::Contains("data.workers: 2"));
  CHECK_FALSE(monitor.interval_warning(0, 100, 0));
  CHECK(monitor.interval_warning(1, 100, 0));
  std::optional<std::string> warning;
  const RankFigures figures = monitor.compare({step_of(0.01, 0.1, 0.2, 0.3), step_of(0.01, 0.4, 0.2, 0.0)}, warning);
  CHECK(figures.slowest == 1);
  CHECK(figures.slowest_score == Approx(0.31 / 0.61));
  CHECK_FALSE(warning);  // one window is not yet chronic
  for (int i = 0; i < 2; ++i) monitor.compare({step_of(0.01, 0.1, 0.2, 0.3), step_of(0.01, 0.4, 0.2, 0.0)}, warning);
  REQUIRE(warning);
  CHECK_THAT(*warning, Catch::StartsWith("straggler: rank 1 (host h) at 0.51") && Catch::Contains("3 logging windows in a row"));
  // Rank 0's communication is its wait for rank 1: the least-waiting rank's (none) is what counts.
  CHECK_FALSE(has_verdict(monitor.run_verdicts(100, 0, std::nullopt), "comm_bound"));
  CHECK_FALSE(monitor.mfu(10));
  CHECK_FALSE(monitor.memory_fraction(100));
}

// A logging window that began in the epoch before (log_every longer than an epoch) once counted
// all its steps' communication against the epoch's few: "communication-bound: 92%" beside a
// breakdown of 15%. The verdict quotes the breakdown of the same steps.
TEST_CASE("the communication verdict quotes the breakdown's share of the same steps", "[observe]") {
  Recipe recipe;
  PerfContext context;
  context.world_size = 2;
  context.cores = 8;
  const RunPlan plan = RunPlan::of(recipe, context.world_size);
  PerfMonitor monitor(recipe, plan, context);
  for (int i = 0; i < 32; ++i) monitor.add_steps({step_of(0.0, 0.3, 0.4, 0.3)});
  monitor.restart_epoch();  // epoch 2: 8 steps, then the window's line at the run's last step
  for (int i = 0; i < 8; ++i) monitor.add_steps({step_of(0.0, 0.3, 0.4, 0.3)});
  std::optional<std::string> warning;
  monitor.compare({step_of(0.0, 0.3, 0.4, 0.3), step_of(0.0, 0.3, 0.45, 0.25)}, warning);
  const double breakdown = monitor.epoch().fraction(Phase::kComm);
  CHECK(breakdown == Approx(0.3));
  for (const std::vector<Verdict>& verdicts : {monitor.epoch_verdicts(100, 0, std::nullopt), monitor.run_verdicts(100, 0, std::nullopt)}) {
    const Verdict comm = verdict(verdicts, "comm_bound");
    CHECK(comm.value == Approx(breakdown));
    CHECK_THAT(comm.message, Catch::StartsWith("communication-bound: 30% of the step waits"));
  }
  // Where the rank that waited least is under the threshold, rank 0 waited for it: no verdict.
  const RunPlan straggling_plan = RunPlan::of(recipe, context.world_size);
  PerfMonitor straggling(recipe, straggling_plan, context);
  for (int i = 0; i < 8; ++i) straggling.add_steps({step_of(0.0, 0.3, 0.4, 0.3)});
  straggling.compare({step_of(0.0, 0.3, 0.4, 0.3), step_of(0.0, 0.6, 0.4, 0.05)}, warning);
  CHECK_FALSE(has_verdict(straggling.epoch_verdicts(100, 0, std::nullopt), "comm_bound"));
}
