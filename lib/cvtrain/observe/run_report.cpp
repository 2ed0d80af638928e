// The run report's page (see run_report.h): sections in the order a person asks their questions.
#include "cvtrain/observe/run_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "cvtrain/core/step_phase.h"
#include "cvtrain/core/text.h"
#include "cvtrain/observe/class_report.h"
#include "cvtrain/observe/report_html.h"
#include "cvtrain/observe/segmentation_report.h"
#include "cvtrain/observe/svg_chart.h"

namespace cvtrain {

namespace {

// One colour per phase, the same in every chart: warm for waiting on input, cool for compute.
constexpr std::array<const char*, kPhaseCount> kPhaseColours{"#e45756", "#f58518", "#4c78a8", "#72b7b2",
                                                             "#b279a2", "#54a24b", "#bab0ac"};
constexpr const char* kBlue = "#4c78a8";
constexpr const char* kOrange = "#f58518";
constexpr const char* kGreen = "#54a24b";
constexpr const char* kRed = "#e45756";
constexpr const char* kGrey = "#9d9d9d";
constexpr size_t kMaxRankLines = 8;  // more ranks are drawn as min / median / max


double last_finite(const std::vector<double>& values) {
  for (auto it = values.rbegin(); it != values.rend(); ++it)
    if (std::isfinite(*it)) return *it;
  return std::nan("");
}

double max_finite(const std::vector<double>& values) {
  double best = std::nan("");
  for (const double v : values)
    if (std::isfinite(v) && !(v <= best)) best = v;
  return best;
}

double median_finite(std::vector<double> values) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }), values.end());
  if (values.empty()) return std::nan("");
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2), values.end());
  return values[values.size() / 2];
}

std::string or_dash(double v, const std::string& formatted) { return std::isfinite(v) ? formatted : "—"; }

ChartSeries series(const std::string& name, const char* colour, std::vector<double> x, std::vector<double> y, bool dots = false) {
  ChartSeries s;
  s.name = name;
  s.colour = colour;
  s.x = std::move(x);
  s.y = std::move(y);
  s.dots = dots;
  return s;
}

int world_size_of(const RunHistory& run) {
  if (const auto w = run.provenance.number("world_size")) return static_cast<int>(*w);
  return std::max<int>(1, static_cast<int>(run.summary["ranks"].array().size()));
}

// Under the top-1 tile: the best epoch's figure, and where its checkpoint is when the run kept it.
std::string best_top1_note(const RunHistory& run, const std::vector<double>& top1) {
  if (!std::isfinite(max_finite(top1))) return "no evaluated epoch (yet, or no data.val)";
  const std::optional<double> kept = run.best.number("top1"), epoch = run.best.number("epoch");
  if (kept && epoch && run.best.text("metric") == "top1")
    return fmt::format("best {:.2f}% at epoch {:.0f}, its checkpoint in best/", 100 * *kept, *epoch);
  return fmt::format("best {:.2f}%", 100 * max_finite(top1));
}

std::string key_figures(const RunHistory& run) {
  const std::vector<double> steps = column(run.intervals, "step"), epoch_steps = column(run.epochs, "step");
  const double step = std::max(last_finite(steps), last_finite(epoch_steps));
  const JsonValue& use = run.summary["utilisation"];
  const double images_per_s = use.number("images_per_s").value_or(median_finite(column(run.intervals, "images_per_s")));
  const double step_s = use.number("step_s").value_or(median_finite(column(run.intervals, "step_s")));
  const int world = world_size_of(run);
  const std::vector<double> top1 = column(run.epochs, "top1");
  const double peak_mb = max_finite(column(run.epochs, "peak_memory_mb"));
  std::string out = "<div class=\"tiles\">\n";
  out += html_tile("steps", or_dash(step, fmt::format("{:.0f}", step)), fmt::format("{} epoch(s) logged", run.epochs.size()));
  out += scored_by_miou(run)
             ? miou_tile(run)
             : html_tile("top-1", or_dash(last_finite(top1), fmt::format("{:.2f}%", 100 * last_finite(top1))), best_top1_note(run, top1));
  out += html_tile("images/s", or_dash(images_per_s, fmt::format("{:.0f}", images_per_s)),
              std::isfinite(images_per_s) ? fmt::format("{:.0f} per rank, {} rank(s)", images_per_s / world, world) : "");
  out += html_tile("step time", or_dash(step_s, fmt::format("{:.3f} s", step_s)), "mean over the run");
  const std::optional<double> mfu = use.number("mfu");
  out += html_tile("MFU", mfu ? fmt::format("{:.1f}%", 100 * *mfu) : "—",
              mfu ? fmt::format("{:.1f} of {:.0f} TFLOP/s", use.number("tflops").value_or(0), use.number("peak_tflops").value_or(0))
                  : "no known peak (CPU, or set observe.peak_tflops)");
  const std::optional<double> memory = use.number("memory_fraction");
  out += html_tile("peak memory", or_dash(peak_mb, fmt::format("{:.0f} MB", peak_mb)),
              memory ? fmt::format("{:.0f}% of the device", 100 * *memory) : "largest rank, above its start");
  return out + "</div>\n";
}

// The first failure of the latest start (the others are most often its consequences: peers that
// lost their connection), and the earlier starts' failures, which a restart or resume survived.
std::string failure_items(const RunHistory& run) {
  const std::vector<FailureRecord> latest = failures_of_latest_start(run);
  std::string out;
  if (!latest.empty()) {
    const FailureRecord& first = latest.front();
    const std::string others = latest.size() > 1 ? fmt::format(" ({} more line(s) after it in failures.jsonl)", latest.size() - 1) : "";
    out += fmt::format("<li style=\"white-space: pre-line\"><span class=\"kind\">failed</span> {} on {} at {}: {}{}</li>\n",
                       xml_escape(first.who), xml_escape(first.host), xml_escape(first.time), xml_escape(first.message), others);
  }
  const size_t earlier = run.failures.size() - latest.size();
  if (earlier > 0)
    out += fmt::format(
        "<li class=\"info\"><span class=\"kind\">earlier</span> {} failure line(s) of earlier starts, the first {} at {}: {}</li>\n",
        earlier, xml_escape(run.failures.front().who), xml_escape(run.failures.front().time), xml_escape(run.failures.front().message));
  return out;
}

std::string verdict_list(const RunHistory& run) {
  std::string out = "<h2>What holds the run back</h2>\n<ul class=\"verdicts\">\n" + failure_items(run);
  for (const JsonValue& f : run.preflight["findings"].array())
    out += fmt::format("<li><span class=\"kind\">preflight</span> {}</li>\n", xml_escape(f.text("message")));
  const JsonValue::Array& verdicts = run.summary["verdicts"].array();
  for (const JsonValue& v : verdicts) {
    const std::string kind = v.text("kind");
    // Summaries written before verdicts carried a severity: the kinds that were always mild then.
    const std::string severity = v.text("severity");
    const bool mild = severity.empty() ? kind == "stall" || kind == "step_outliers" : severity == "note";
    out += fmt::format("<li class=\"{}\"><span class=\"kind\">{}</span> {}</li>\n", mild ? "info" : "", xml_escape(kind),
                       xml_escape(v.text("message")));
  }
  if (run.summary.is_null() && failures_of_latest_start(run).empty())
    out += "<li class=\"info\"><span class=\"kind\">not yet</span> The verdicts are written to perf_summary.json when the run ends.</li>\n";
  else if (!run.summary.is_null() && verdicts.empty())
    out += "<li class=\"ok\"><span class=\"kind\">none</span> No bottleneck passed its threshold: the step time is the model's own work.</li>\n";
  return out + "</ul>\n";
}

std::string loss_chart(const RunHistory& run) {
  std::vector<ChartSeries> s{series("train loss", kBlue, column(run.intervals, "step"), column(run.intervals, "loss")),
                             series("validation loss", kOrange, column(run.epochs, "step"), column(run.epochs, "val_loss"), true)};
  return html_card(line_chart(ChartFrame{"loss", "Loss", "step", "loss", false, false, true}, s), "train: mean over each logging interval");
}

std::string accuracy_chart(const RunHistory& run) {
  if (scored_by_miou(run)) return miou_chart(run);
  const std::vector<double> epochs = column(run.epochs, "epoch");
  std::vector<ChartSeries> s{series("top-1", kBlue, epochs, column(run.epochs, "top1"), true),
                             series("top-5", kGreen, epochs, column(run.epochs, "top5"), true)};
  return html_card(line_chart(ChartFrame{"accuracy", "Validation accuracy", "epoch", "accuracy", true, false, true}, s), "");
}

std::string throughput_chart(const RunHistory& run) {
  std::vector<ChartSeries> s{series("images/s, interval", kBlue, column(run.intervals, "step"), column(run.intervals, "images_per_s")),
                             series("images/s, epoch", kOrange, column(run.epochs, "step"), column(run.epochs, "images_per_s"), true)};
  return html_card(line_chart(ChartFrame{"throughput", "Throughput (whole job)", "step", "images/s", false, true, true}, s),
                   "interval: each logging window; epoch: the epoch's images over its training time (evaluation left out)");
}

std::string breakdown_chart(const RunHistory& run) {
  std::vector<ChartSeries> layers;
  for (size_t p = 0; p < kPhaseCount; ++p)
    layers.push_back(series(kPhaseNames[p], kPhaseColours[p], {}, column(run.intervals, std::string(kPhaseNames[p]) + "_s")));
  std::vector<double> x = column(run.intervals, "step");
  // Intervals without a breakdown (observe.breakdown: false) carry no phase fields.
  const std::vector<double> timed = column(run.intervals, "breakdown_steps");
  std::vector<double> kept_x;
  std::vector<ChartSeries> kept = layers;
  for (auto& l : kept) l.y.clear();
  for (size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(timed[i])) continue;
    kept_x.push_back(x[i]);
    for (size_t p = 0; p < kPhaseCount; ++p) kept[p].y.push_back(layers[p].y[i]);
  }
  return html_card(
      stacked_area_chart(ChartFrame{"breakdown", "Where the step time goes (rank 0)", "step", "seconds per step", false, true, true},
                         kept_x, kept),
      "data: waiting for the input pipeline; comm: communication left exposed after backward; other: logging and "
      "checkpoints between steps");
}

std::string rank_spread_chart(const RunHistory& run) {
  const std::vector<double> x = column(run.intervals, "step");
  std::vector<ChartSeries> s{series("slowest rank", kRed, x, column(run.intervals, "rank_own_s_max")),
                             series("median rank", kBlue, x, column(run.intervals, "rank_own_s_median")),
                             series("fastest rank", kGreen, x, column(run.intervals, "rank_own_s_min"))};
  return html_card(
      line_chart(ChartFrame{"rank_spread", "Per-rank step time over the run", "step", "own seconds per step", false, false, true}, s),
      "each rank's own work per step (communication and waiting for others left out), over ranks");
}

std::string rank_bars_chart(const RunHistory& run) {
  const JsonValue::Array& ranks = run.summary["ranks"].array();
  std::vector<std::string> labels;
  std::vector<ChartSeries> layers;
  for (size_t p = 0; p < kPhaseCount; ++p) layers.push_back(series(kPhaseNames[p], kPhaseColours[p], {}, {}));
  for (const JsonValue& r : ranks) {
    labels.push_back(fmt::format("{} · {:.2f}", r.text("label"), r.number("score").value_or(1)));
    for (size_t p = 0; p < kPhaseCount; ++p) layers[p].y.push_back(r.number(kPhaseNames[p]).value_or(0));
  }
  return html_card(stacked_bar_chart(ChartFrame{"rank_bars", "Each rank's step, by phase", "seconds per step", ""}, labels, layers),
              "the number after each rank is its straggler score: the fastest rank's own time ÷ this rank's");
}

// Peak memory of each rank at each epoch ("peak_memory_mb_per_rank" holds them as one string).
std::string memory_chart(const RunHistory& run) {
  std::vector<std::vector<double>> per_rank;
  std::vector<double> epochs = column(run.epochs, "epoch");
  for (size_t e = 0; e < run.epochs.size(); ++e) {
    std::istringstream values(run.epochs[e].text("peak_memory_mb_per_rank"));
    size_t r = 0;
    for (double mb; values >> mb; ++r) {
      if (per_rank.size() <= r) per_rank.emplace_back(run.epochs.size(), std::nan(""));
      per_rank[r][e] = mb;
    }
  }
  std::vector<ChartSeries> s;
  if (per_rank.size() <= kMaxRankLines) {
    constexpr std::array<const char*, kMaxRankLines> kColours{"#4c78a8", "#f58518", "#54a24b", "#e45756",
                                                              "#72b7b2", "#b279a2", "#eeca3b", "#9d755d"};
    for (size_t r = 0; r < per_rank.size(); ++r) s.push_back(series(fmt::format("rank {}", r), kColours[r], epochs, per_rank[r], true));
  } else {
    std::vector<double> low, high;
    for (size_t e = 0; e < epochs.size(); ++e) {
      double lo = INFINITY, hi = -INFINITY;
      for (const auto& r : per_rank) lo = std::min(lo, r[e]), hi = std::max(hi, r[e]);
      low.push_back(lo);
      high.push_back(hi);
    }
    s = {series("largest rank", kRed, epochs, high, true), series("smallest rank", kGreen, epochs, low, true)};
  }
  return html_card(line_chart(ChartFrame{"memory", "Peak memory per rank", "epoch", "MB above the rank's start", false, true, true}, s),
              "CUDA: the caching allocator's peak; CPU: the process's peak resident set");
}

std::string learning_rate_chart(const RunHistory& run) {
  std::vector<ChartSeries> s{series("learning rate", kBlue, column(run.intervals, "step"), column(run.intervals, "lr"))};
  if (std::isfinite(max_finite(column(run.intervals, "loss_scale"))))
    return html_card(line_chart(ChartFrame{"lr", "Learning rate", "step", "lr", false, true, true}, s), "") +
           html_card(line_chart(ChartFrame{"loss_scale", "fp16 loss scale", "step", "scale", false, true, true},
                                {series("loss scale", kOrange, column(run.intervals, "step"), column(run.intervals, "loss_scale"))}),
                     "halved at each overflow, doubled after a run of good steps");
  return html_card(line_chart(ChartFrame{"lr", "Learning rate", "step", "lr", false, true, true}, s), "");
}

std::string charts(const RunHistory& run) {
  std::string out = "<h2>Training</h2>\n<div class=\"grid\">\n" + loss_chart(run) + accuracy_chart(run) + throughput_chart(run) +
                    learning_rate_chart(run) + "</div>\n<h2>Step time</h2>\n<div class=\"grid\">\n" + breakdown_chart(run);
  if (world_size_of(run) > 1) out += rank_spread_chart(run) + rank_bars_chart(run);
  return out + memory_chart(run) + "</div>\n";
}

std::string provenance_table(const RunHistory& run) {
  std::string rows = fmt::format("<tr><th>run folder</th><td>{}</td></tr>\n", xml_escape(run.folder));
  for (const auto& [key, value] : run.provenance.object()) {
    std::string text;
    if (value.is_array()) {
      std::vector<std::string> items;
      for (const JsonValue& item : value.array()) items.push_back(item.string().value_or(""));
      text = join(items, ", ");
    } else if (value.is_number()) {
      text = fmt::format("{:g}", *value.number());
    } else {
      text = value.string().value_or("");
    }
    rows += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", xml_escape(key), xml_escape(text));
  }
  return "<div><h2>Provenance</h2>\n<table>\n" + rows + "</table>\n</div>\n";
}

// preflight.json's measurements, one row per rank, when the run has them.
std::string preflight_section(const RunHistory& run) {
  const JsonValue::Array& ranks = run.preflight["ranks"].array();
  if (ranks.empty()) return "";
  const auto number = [](const JsonValue& row, const char* key, const char* format_spec) {
    const std::optional<double> v = row.number(key);
    return v ? fmt::format(fmt::runtime(format_spec), *v) : std::string("—");
  };
  std::string rows;
  for (const JsonValue& r : ranks)
    rows += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", xml_escape(r.text("label")),
                        number(r, "matmul_tflops", "{:.3g}"), number(r, "h2d_gbps", "{:.1f}"), number(r, "pipeline_images_per_s", "{:.0f}"),
                        number(r, "model_images_per_s", "{:.0f}"));
  const JsonValue& link = run.preflight["allreduce"];
  const std::string bus = link.number("bus_gbps") ? fmt::format("<p class=\"sub\">All-reduce bus bandwidth {:.2f} GB/s over {} ranks.</p>\n",
                                                                *link.number("bus_gbps"), ranks.size())
                                                  : "";
  return "<h2>Preflight (before training)</h2>\n<table>\n<tr><th>rank</th><th>matmul TFLOP/s</th><th>to-device GB/s</th>"
         "<th>pipeline images/s</th><th>model images/s</th></tr>\n" + rows + "</table>\n" + bus;
}

std::string title_of(const RunHistory& run) {
  const std::string name = std::filesystem::path(run.folder).lexically_normal().filename().string();
  return name.empty() ? run.folder : name;
}

std::string subtitle(const RunHistory& run) {
  const bool failed = !failures_of_latest_start(run).empty();
  std::vector<std::string> parts{failed ? "failed" : run.summary.is_null() ? "running or stopped before its end" : "finished"};
  if (const std::string device = run.provenance.text("device"); !device.empty())
    parts.push_back(fmt::format("{} rank(s) on {}", world_size_of(run), device));
  if (const std::string started = run.provenance.text("started_at"); !started.empty()) parts.push_back("started " + started);
  return join(parts, " · ");
}

}  // namespace

std::string run_report_html(const RunHistory& run, const std::string& generated_at) {
  const std::string recipe = xml_escape(run.recipe_yaml.empty() ? "(recipe.yaml is not in the run folder)" : run.recipe_yaml);
  return html_page(
      HtmlPage{"cvtrain report: " + title_of(run), title_of(run), subtitle(run),
               key_figures(run) + verdict_list(run) + charts(run) + class_accuracy_section(run.eval) + class_iou_section(run.eval) +
                   preflight_section(run) + "<div class=\"pair\">\n<div><h2>Recipe (resolved)</h2>\n<pre>" + recipe + "</pre>\n</div>\n" +
                   provenance_table(run) + "</div>\n",
               "the run folder's metrics.jsonl, perf_summary.json, provenance.json, recipe.yaml and eval.json", generated_at, run.notes});
}

}  // namespace cvtrain
