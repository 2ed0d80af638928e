// RunPlan: what a recipe's `auto`s resolve to without touching the recipe, and the strategies'
// traits table that the checks, the step's graph and the advice ask.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "cvtrain/core/error.h"
#include "cvtrain/recipe/run_plan.h"
#include "cvtrain/recipe/strategy_traits.h"

using namespace cvtrain;

namespace {

Recipe two_rank_recipe() {
  Recipe r;
  r.train.global_batch = 256;
  r.train.micro_batch = 64;
  r.train.accumulation = 2;
  return r;
}

std::map<std::string, std::string> rows_of(const RunPlan& plan) {
  std::map<std::string, std::string> rows;
  for (const auto& [name, value] : plan.rows()) rows[name] = value;
  return rows;
}

}  // namespace

TEST_CASE("every strategy has its traits, and auto none until resolved", "[recipe]") {
  for (const StrategyKind kind :
       {StrategyKind::kSingle, StrategyKind::kDdp, StrategyKind::kZero1, StrategyKind::kZero2, StrategyKind::kFsdp}) {
    const StrategyTraits& t = strategy_traits(kind);
    CHECK(t.kind == kind);
    CHECK(t.one_process == (kind == StrategyKind::kSingle));
    CHECK(t.updates_flat_shards == (kind == StrategyKind::kZero1 || kind == StrategyKind::kZero2 || kind == StrategyKind::kFsdp));
    CHECK(t.overlaps_in_buckets == (kind == StrategyKind::kDdp || kind == StrategyKind::kZero1));
    CHECK((t.gathers_in_step != nullptr) == (kind == StrategyKind::kFsdp));
  }
  CHECK_THROWS_AS(strategy_traits(StrategyKind::kAuto), Error);
  CHECK(resolve_strategy(StrategyKind::kAuto, 1) == StrategyKind::kSingle);
  CHECK(resolve_strategy(StrategyKind::kAuto, 2) == StrategyKind::kDdp);
  CHECK(resolve_strategy(StrategyKind::kZero2, 1) == StrategyKind::kZero2);
}

TEST_CASE("the plan resolves strategy, optimizer path, precision and batch, and leaves the recipe as written", "[recipe]") {
  Recipe r = two_rank_recipe();
  r.precision = Precision::kFp16;
  r.train.cuda_graphs = true;
  const Recipe written = r;
  const RunPlan plan = RunPlan::of(r, 2);
  CHECK(plan.strategy == StrategyKind::kDdp);
  CHECK(plan.optimizer_path == OptimImplementation::kFused);  // a captured step needs the device's skip decision
  CHECK(plan.precision.loss_scaling());
  CHECK(plan.batch.global == 256);
  CHECK(plan.batch.micro == 64);
  CHECK(plan.batch.accumulation == 2);
  CHECK(plan.batch.world == 2);
  CHECK(r.strategy == StrategyKind::kAuto);
  CHECK(r.optim.implementation == OptimImplementation::kAuto);
  CHECK(r.train.micro_batch == written.train.micro_batch);

  r.train.cuda_graphs = false;
  r.optim.implementation = OptimImplementation::kForeach;
  CHECK(RunPlan::of(r, 2).optimizer_path == OptimImplementation::kForeach);
  r.strategy = StrategyKind::kFsdp;
  CHECK(RunPlan::of(r, 2).strategy_traits().gathers_in_step != nullptr);
}

TEST_CASE("the plan's rows say what the recipe decides and, once the job starts, what the machine did", "[recipe]") {
  Recipe r = two_rank_recipe();
  r.precision = Precision::kBf16;
  RunPlan plan = RunPlan::of(r, 2);
  std::map<std::string, std::string> rows = rows_of(plan);
  CHECK(rows.at("batch") == "global 256 = micro 64 x accumulation 2 x world size 2");
  CHECK(rows.at("strategy") == "ddp");
  CHECK(rows.at("precision") == "bf16: autocast to bfloat16");
  CHECK(rows.count("device") == 0);  // data.workers auto and the device wait for the job's machine
  CHECK(rows.count("workers") == 0);
  CHECK(plan.workers_described() == "auto (?)");

  plan.device = "cuda:0";
  plan.workers = 6;
  rows = rows_of(plan);
  CHECK(rows.at("device") == "cuda:0");
  CHECK(rows.at("workers") == "6 decode thread(s) per rank (data.workers: auto, from the cores the job has here)");
  CHECK(plan.workers_described() == "auto (6)");

  r.data.workers = WorkerCount::exactly(0);
  r.precision = Precision::kFp16;
  r.train.micro_batch_auto = true;
  const RunPlan fixed = RunPlan::of(r, 2);
  rows = rows_of(fixed);
  CHECK(rows.at("workers") == "none: the training thread decodes");
  CHECK(fixed.workers_described() == "0");
  CHECK(rows.at("precision") == "fp16: autocast to float16, dynamic loss scaling");
  CHECK_THAT(rows.at("batch"), Catch::EndsWith("(micro-batch auto: searched in the GPU's memory at the start)"));
}
