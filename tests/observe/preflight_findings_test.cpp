// Preflight's rules: which measurements make a finding, what it names and which recipe key it gives.
#include <catch2/catch.hpp>

#include "cvtrain/observe/preflight_findings.h"
#include "cvtrain/recipe/run_plan.h"

using namespace cvtrain;

namespace {

RankProbe probe(const std::string& label, double tflops, double pipeline, double model, std::optional<double> h2d = std::nullopt) {
  RankProbe p;
  p.label = label;
  p.matmul_tflops = tflops;
  p.pipeline_images_per_s = pipeline;
  p.model_images_per_s = model;
  p.h2d_gbps = h2d;
  return p;
}

std::vector<std::string> kinds(const std::vector<Verdict>& findings) {
  std::vector<std::string> out;
  for (const Verdict& f : findings) out.push_back(f.kind);
  return out;
}

}  // namespace

TEST_CASE("a balanced job with a fast enough pipeline and network has no finding", "[observe]") {
  Recipe recipe;
  recipe.train.micro_batch = 64;
  recipe.train.accumulation = 1;
  PreflightResults r;
  r.ranks = {probe("rank 0 (host a, GPU 0)", 600, 3000, 2500, 50), probe("rank 1 (host a, GPU 1)", 590, 3100, 2450, 48)};
  r.bus_gbps = 100;
  r.gradient_mb = 100;
  CHECK(preflight_findings(r, recipe, RunPlan::of(recipe, static_cast<int>(r.ranks.size()))).empty());
  const std::string table = preflight_table(r);
  CHECK_THAT(table, Catch::Contains("preflight on 2 rank(s)") && Catch::Contains("rank 1 (host a, GPU 1)") &&
                        Catch::Contains("all-reduce bus bandwidth 100.00 GB/s"));
}

TEST_CASE("preflight names the slow rank, the narrow link, the short pipeline and the slow network", "[observe]") {
  Recipe recipe;
  recipe.data.workers = WorkerCount::exactly(4);
  recipe.train.micro_batch = 64;
  recipe.train.accumulation = 1;
  PreflightResults r;
  r.ranks = {probe("rank 0 (host a, GPU 0)", 600, 3000, 2500, 50), probe("rank 1 (host a, GPU 1)", 610, 1000, 2500, 12),
             probe("rank 2 (host b, GPU 0)", 300, 3000, 2400, 49)};
  r.bus_gbps = 1;  // 2 x 2/3 x 100 MB / 1 GB/s = 133 ms against 26 ms of compute
  r.gradient_mb = 100;
  const std::vector<Verdict> findings = preflight_findings(r, recipe, RunPlan::of(recipe, static_cast<int>(r.ranks.size())));
  REQUIRE(kinds(findings) == std::vector<std::string>{"slow_rank", "slow_copy", "input_short", "network_short"});
  CHECK(findings[0].value == Approx(0.5));
  CHECK_THAT(findings[0].message, Catch::StartsWith("slow rank: rank 2 (host b, GPU 0) multiplies matrices at 300 TFLOP/s against the "
                                                    "median rank's 600 (50%)"));
  CHECK_THAT(findings[1].message, Catch::StartsWith("slow host-to-device link: rank 1 (host a, GPU 1) copies to its GPU at 12.0 GB/s"));
  CHECK(findings[2].value == Approx(0.4));
  CHECK_THAT(findings[2].message, Catch::Contains("rank 1 (host a, GPU 1) prepares 1000 images/s with data.workers: 4") &&
                                      Catch::Contains("wait for data about 60%") && Catch::Contains("data.workers: 11 would keep up"));
  CHECK_THAT(findings[3].message, Catch::Contains("over 3 ranks is 1.00 GB/s") && Catch::Contains("train.accumulation: 2"));
  const std::string json = preflight_json(r, findings);
  CHECK_THAT(json, Catch::Contains("\"bus_gbps\": 1") && Catch::Contains("\"kind\": \"network_short\"") &&
                       Catch::Contains("\"h2d_gbps\": 12"));
  SECTION("the network threshold is observe.comm_bound") {
    recipe.observe.comm_bound = 0.9;
    CHECK(kinds(preflight_findings(r, recipe, RunPlan::of(recipe, static_cast<int>(r.ranks.size())))) ==
          std::vector<std::string>{"slow_rank", "slow_copy", "input_short"});
  }
}

TEST_CASE("one rank is never a slow rank, and a CPU has no link to name", "[observe]") {
  Recipe recipe;
  recipe.train.micro_batch = 8;
  PreflightResults r;
  r.ranks = {probe("rank 0 (host a)", 0.05, 50000, 600)};
  CHECK(preflight_findings(r, recipe, RunPlan::of(recipe, static_cast<int>(r.ranks.size()))).empty());
  CHECK_THAT(preflight_table(r), Catch::Contains("—"));  // to-device not measured
  r.ranks[0].pipeline_images_per_s.reset();  // synthetic data: no pipeline, so nothing to find there
  r.ranks[0].model_images_per_s = 1e9;
  CHECK(preflight_findings(r, recipe, RunPlan::of(recipe, static_cast<int>(r.ranks.size()))).empty());
  CHECK_THAT(preflight_json(r, {}), !Catch::Contains("pipeline_images_per_s"));
}
