// Preflight's rules and wording (see preflight_findings.h).
#include "cvtrain/observe/preflight_findings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "cvtrain/core/text.h"
#include "cvtrain/observe/metrics_log.h"
#include "cvtrain/recipe/run_plan.h"

namespace cvtrain {
namespace {

constexpr double kSlowRank = 0.8;   // below this fraction of the median rank's rate a rank holds the others back
constexpr double kSlowCopy = 0.6;   // host-to-device links vary more; only a clearly narrower one is named
constexpr double kWorkerMargin = 1.1;

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

template <class Field>
std::vector<double> column_of(const PreflightResults& r, Field field) {
  std::vector<double> out;
  for (const RankProbe& p : r.ranks) out.push_back(field(p));
  return out;
}

void slow_ranks(const PreflightResults& r, std::vector<Verdict>& out) {
  const double median = median_of(column_of(r, [](const RankProbe& p) { return p.matmul_tflops; }));
  for (const RankProbe& p : r.ranks)
    if (r.ranks.size() > 1 && p.matmul_tflops < kSlowRank * median)
      out.push_back(Verdict{"slow_rank", p.matmul_tflops / median,
                            fmt::format("slow rank: {} multiplies matrices at {:.3g} TFLOP/s against the median rank's {:.3g} ({:.0f}%); "
                                        "in synchronous training every rank waits for it. Check that host (other processes, clocks, "
                                        "thermals) or leave it out of the job.",
                                        p.label, p.matmul_tflops, median, 100 * p.matmul_tflops / median)});
}

void slow_copies(const PreflightResults& r, std::vector<Verdict>& out) {
  std::vector<double> rates;
  for (const RankProbe& p : r.ranks)
    if (p.h2d_gbps) rates.push_back(*p.h2d_gbps);
  const double median = median_of(rates);
  for (const RankProbe& p : r.ranks)
    if (p.h2d_gbps && rates.size() > 1 && *p.h2d_gbps < kSlowCopy * median)
      out.push_back(Verdict{"slow_copy", *p.h2d_gbps / median,
                            fmt::format("slow host-to-device link: {} copies to its GPU at {:.1f} GB/s against the median rank's "
                                        "{:.1f}: a narrower or shared PCIe link, or memory on the far NUMA node (`nvidia-smi topo -m`).",
                                        p.label, *p.h2d_gbps, median)});
}

void short_input(const PreflightResults& r, const RunPlan& plan, std::vector<Verdict>& out) {
  const RankProbe* worst = nullptr;
  const auto share_of = [](const RankProbe& p) { return *p.pipeline_images_per_s / p.model_images_per_s; };
  for (const RankProbe& p : r.ranks)
    if (p.pipeline_images_per_s && p.model_images_per_s > 0 && (!worst || share_of(p) < share_of(*worst))) worst = &p;
  if (!worst || share_of(*worst) >= 1) return;
  const double share = share_of(*worst);
  const int64_t workers = plan.workers.value_or(0);
  const auto needed = static_cast<int64_t>(std::ceil(kWorkerMargin * static_cast<double>(std::max<int64_t>(workers, 1)) / share));
  out.push_back(
      Verdict{"input_short", share,
              fmt::format("input pipeline too slow: {} prepares {:.0f} images/s with data.workers: {}, but the model trains on {:.0f} "
                          "images/s there, so training would wait for data about {:.0f}% of the time; data.workers: {} would keep up "
                          "(if the node has the cores; else pack the data pre-resized with `cvtrain data pack --resize`).",
                          worst->label, *worst->pipeline_images_per_s, plan.workers_described(), worst->model_images_per_s,
                          100 * (1 - share), std::max(needed, workers + 1))});
}

void short_network(const PreflightResults& r, const Recipe& recipe, const RunPlan& plan, std::vector<Verdict>& out) {
  const auto n = static_cast<double>(r.ranks.size());
  if (!r.bus_gbps || n < 2 || *r.bus_gbps <= 0) return;
  const double model_rate = median_of(column_of(r, [](const RankProbe& p) { return p.model_images_per_s; }));
  if (model_rate <= 0) return;
  const double comm_s = 2 * (n - 1) / n * r.gradient_mb * 1e6 / (*r.bus_gbps * 1e9);
  const double compute_s = static_cast<double>(plan.batch.per_rank()) / model_rate;
  const double share = comm_s / (comm_s + compute_s);
  if (share < recipe.observe.comm_bound) return;
  out.push_back(Verdict{
      "network_short", share,
      fmt::format("network too slow for the gradients: the all-reduce bus bandwidth over {} ranks is {:.2f} GB/s, so each step's "
                  "{:.0f} MB of gradients take about {:.0f} ms against {:.0f} ms of forward and backward ({:.0f}% if none of it "
                  "overlaps); train.accumulation: {} all-reduces half as often, or a faster interconnect.",
                  r.ranks.size(), *r.bus_gbps, r.gradient_mb, 1e3 * comm_s, 1e3 * compute_s, 100 * share, 2 * plan.batch.accumulation)});
}

std::string cell(const std::optional<double>& v, int decimals) { return v ? fmt::format("{:.{}f}", *v, decimals) : "—"; }

}  // namespace

std::vector<Verdict> preflight_findings(const PreflightResults& results, const Recipe& recipe, const RunPlan& plan) {
  std::vector<Verdict> out;
  slow_ranks(results, out);
  slow_copies(results, out);
  short_input(results, plan, out);
  short_network(results, recipe, plan, out);
  return out;
}

std::string preflight_table(const PreflightResults& r) {
  std::string text = fmt::format("preflight on {} rank(s), {}:\n  {:<34} {:>14} {:>14} {:>15} {:>12}\n", r.ranks.size(), r.device, "rank",
                                 "matmul TFLOP/s", "to-device GB/s", "pipeline img/s", "model img/s");
  for (const RankProbe& p : r.ranks)
    text += fmt::format("  {:<34} {:>14.3g} {:>14} {:>15} {:>12.0f}\n", p.label, p.matmul_tflops, cell(p.h2d_gbps, 1),
                        cell(p.pipeline_images_per_s, 0), p.model_images_per_s);
  if (r.bus_gbps)
    text += fmt::format("  all-reduce bus bandwidth {:.2f} GB/s ({:.1f} MB tensors; the model's gradients are {:.1f} MB)\n", *r.bus_gbps,
                        r.allreduce_mb, r.gradient_mb);
  return text;
}

std::string preflight_json(const PreflightResults& r, const std::vector<Verdict>& findings) {
  std::vector<std::string> ranks, found;
  for (size_t i = 0; i < r.ranks.size(); ++i) {
    const RankProbe& p = r.ranks[i];
    MetricRecord row{{"rank", static_cast<int64_t>(i)}, {"label", p.label}, {"matmul_tflops", p.matmul_tflops}};
    if (p.h2d_gbps) row.emplace_back("h2d_gbps", *p.h2d_gbps);
    if (p.pipeline_images_per_s) row.emplace_back("pipeline_images_per_s", *p.pipeline_images_per_s);
    row.emplace_back("model_images_per_s", p.model_images_per_s);
    ranks.push_back(to_json(row));
  }
  for (const Verdict& f : findings) found.push_back(to_json(MetricRecord{{"kind", f.kind}, {"value", f.value}, {"message", f.message}}));
  MetricRecord link{{"allreduce_mb", r.allreduce_mb}, {"gradient_mb", r.gradient_mb}};
  if (r.bus_gbps) link.emplace_back("bus_gbps", *r.bus_gbps);
  return fmt::format("{{\n  \"device\": {},\n  \"ranks\": [\n    {}\n  ],\n  \"allreduce\": {},\n  \"findings\": [{}{}{}]\n}}\n",
                     json_string(r.device), join(ranks, ",\n    "), to_json(link), found.empty() ? "" : "\n    ",
                     join(found, ",\n    "), found.empty() ? "" : "\n  ");
}

}  // namespace cvtrain
