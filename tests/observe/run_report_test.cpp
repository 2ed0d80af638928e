// The run report's parts: the JSON reader, reading a run folder back (partial and damaged lines),
// the SVG charts' geometry, and the page's contents; the browser check is the e2e test's.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <regex>

#include "cvtrain/core/error.h"
#include "cvtrain/core/json_reader.h"
#include "cvtrain/observe/report_html.h"
#include "cvtrain/observe/run_history.h"
#include "cvtrain/observe/run_report.h"
#include "cvtrain/observe/svg_chart.h"
#include "temp_dir.h"

using namespace cvtrain;
using cvtrain::testing::occurrences;
using cvtrain::testing::TempDir;

namespace {

// The numbers of every "M" or "L" point of the first path in `svg` whose title is `name`.
std::vector<std::pair<double, double>> path_points(const std::string& svg, const std::string& name) {
  const std::regex path("<path class=\"series\" d=\"([^\"]*)\"[^>]*><title>" + name + "</title>");
  std::smatch m;
  REQUIRE(std::regex_search(svg, m, path));
  std::vector<std::pair<double, double>> points;
  const std::string d = m[1];
  const std::regex point("[ML](-?[0-9.]+),(-?[0-9.]+)");
  for (auto it = std::sregex_iterator(d.begin(), d.end(), point); it != std::sregex_iterator(); ++it)
    points.emplace_back(std::stod((*it)[1]), std::stod((*it)[2]));
  return points;
}


}  // namespace

TEST_CASE("the JSON reader reads what cvtrain writes, in key order, and names where it fails", "[observe]") {
  const JsonValue v = parse_json(R"J({"kind": "train", "loss": 0.25, "top1": null, "ranks": [1, 2e3, -0.5],
                                     "label": "rank 1 (host \"a\\b\") \u00e9", "ok": true, "nested": {"x": {}}})J",
                                 "test.json");
  REQUIRE(v.is_object());
  CHECK(v.object().front().first == "kind");
  CHECK(v.text("kind") == "train");
  CHECK(*v.number("loss") == 0.25);
  CHECK_FALSE(v.number("top1"));
  CHECK(v["top1"].is_null());
  CHECK_FALSE(v.number("missing"));
  REQUIRE(v["ranks"].array().size() == 3);
  CHECK(*v["ranks"].array()[1].number() == 2000);
  CHECK(v.text("label") == "rank 1 (host \"a\\b\") \xc3\xa9");
  CHECK(v["nested"]["x"].is_object());
  CHECK_THROWS_WITH(parse_json("{\"a\": 1,}", "m.jsonl:3"), Catch::Contains("m.jsonl:3: column 9: expected a key in quotes"));
  CHECK_THROWS_WITH(parse_json("{\"a\": 1} x", "f"), Catch::Contains("column 10: expected end of the document"));
  CHECK_THROWS_WITH(parse_json("{\"a\": tru}", "f"), Catch::Contains("expected a value"));
  CHECK_THROWS_WITH(parse_json("\"open", "f"), Catch::Contains("expected a closing quote"));
}

TEST_CASE("a run folder is read back by kind: a cut last line is noted, a damaged earlier one is an error", "[observe]") {
  TempDir dir;
  const std::string train = R"J({"kind": "train", "epoch": 1, "step": 5, "loss": 2.0})J";
  const std::string epoch = R"J({"kind": "epoch", "epoch": 1, "step": 10, "top1": 0.5})J";
  dir.write("run/metrics.jsonl", train + "\n" + epoch + "\n" + R"J({"kind": "train", "ep)J");
  dir.write("run/recipe.yaml", "model:\n  arch: small_cnn\n");
  const RunHistory run = read_run_history(dir.file("run"));
  CHECK(run.intervals.size() == 1);
  CHECK(run.epochs.size() == 1);
  CHECK(column(run.epochs, "top1") == std::vector<double>{0.5});
  CHECK(std::isnan(column(run.intervals, "top1")[0]));
  CHECK(run.summary.is_null());
  CHECK(run.recipe_yaml.find("small_cnn") != std::string::npos);
  REQUIRE(run.notes.size() >= 2);
  CHECK(run.notes[0].find("metrics.jsonl:3: incomplete last line") != std::string::npos);
  CHECK(run.notes[1].find("perf_summary.json is not there") != std::string::npos);

  dir.write("bad/metrics.jsonl", train + "\n{\"kind\": oops}\n" + epoch + "\n");
  CHECK_THROWS_WITH(read_run_history(dir.file("bad")), Catch::Contains("bad/metrics.jsonl:2: column 10"));
  CHECK_THROWS_WITH(read_run_history(dir.file("nowhere")), Catch::Contains("nowhere: no such run folder"));
  CHECK_THROWS_WITH(read_run_history(dir.write("recipe.yaml", "model: {}\n")), Catch::Contains("recipe.yaml: is a file; give a run folder"));
  dir.write("empty/recipe.yaml", "");
  CHECK_THROWS_WITH(read_run_history(dir.file("empty")), Catch::Contains("not a run folder (no metrics.jsonl"));
}

TEST_CASE("every start of a resumed run is read, a later start's records replacing what the one before logged after its checkpoint", "[observe]") {
  TempDir dir;
  const auto line = [](const char* kind, int step, double value) {
    return fmt::format(R"J({{"kind": "{}", "step": {}, "{}": {}}})J", kind, step, kind == std::string("train") ? "loss" : "top1", value) + "\n";
  };
  // Start 1 logged to step 9 and was killed; start 2 resumed from the checkpoint at step 4 and
  // logged steps 6 and 9 again and was preempted after the epoch; start 3 resumed at step 10.
  dir.write("run/metrics.1.jsonl", line("train", 3, 2.0) + line("train", 6, 1.9) + line("train", 9, 1.8));
  dir.write("run/metrics.2.jsonl", line("train", 6, 1.5) + line("train", 9, 1.4) + line("epoch", 10, 0.5));
  dir.write("run/metrics.jsonl", line("train", 12, 1.2) + line("epoch", 20, 0.6));
  const RunHistory run = read_run_history(dir.file("run"));
  CHECK(column(run.intervals, "step") == std::vector<double>{3, 6, 9, 12});
  CHECK(column(run.intervals, "loss") == std::vector<double>{2.0, 1.5, 1.4, 1.2});
  CHECK(column(run.epochs, "top1") == std::vector<double>{0.5, 0.6});
  CHECK(column(epochs_of_every_start(dir.file("run")), "step") == std::vector<double>{10, 20});
  dir.write("run/metrics.jsonl", line("train", 3, 2.2));  // a fresh start (checkpoint.resume: none) replaces every earlier one
  CHECK(column(read_run_history(dir.file("run")).intervals, "loss") == std::vector<double>{2.2});
  // The resume line names the checkpoint exactly: with a longer train.log_every the first new
  // line (step 20) would leave start 2's steps 6 and 9 standing.
  dir.write("run/metrics.jsonl", std::string(R"J({"kind": "resume", "step": 4})J") + "\n" + line("train", 20, 1.0));
  CHECK(column(read_run_history(dir.file("run")).intervals, "step") == std::vector<double>{3, 20});
}

TEST_CASE("axis ticks are round numbers that cover the range", "[observe]") {
  const std::vector<double> fifths = nice_ticks(0, 1, 5);
  REQUIRE(fifths.size() == 6);
  for (size_t i = 0; i < fifths.size(); ++i) CHECK(fifths[i] == Approx(0.2 * static_cast<double>(i)).margin(1e-12));
  CHECK(nice_ticks(1, 2, 6).back() == 2);  // the last tick is the range's end, not a hair below it
  CHECK(nice_ticks(0, 1450, 5) == std::vector<double>{0, 500, 1000});
  const std::vector<double> t = nice_ticks(0.07, 0.11, 5);
  REQUIRE(t.size() == 5);
  CHECK(t.front() == Approx(0.07));
  CHECK(t.back() == Approx(0.11));
}

TEST_CASE("a line chart breaks its line at missing values and leaves empty series out", "[observe]") {
  ChartSeries loss{"loss", "#123456", {1, 2, 3, 4}, {2.0, 1.5, std::nan(""), 1.0}};
  ChartSeries empty{"val loss", "#654321", {1, 2}, {std::nan(""), std::nan("")}};
  const std::string svg = line_chart(ChartFrame{"loss", "Loss", "step", "loss"}, {loss, empty});
  CHECK(svg.find("data-chart=\"loss\"") != std::string::npos);
  const auto points = path_points(svg, "loss");
  REQUIRE(points.size() == 3);
  CHECK(points[0].first < points[1].first);
  CHECK(points[0].second < points[2].second);  // 2.0 is drawn above 1.0 (SVG's y grows downwards)
  const std::regex path("d=\"M[^\"]*M");  // two sub-paths: the NaN lifted the pen
  CHECK(std::regex_search(svg, path));
  CHECK(svg.find("val loss") == std::string::npos);
  CHECK(svg.find("no data") == std::string::npos);
  CHECK(line_chart(ChartFrame{"e", "Empty"}, {empty}).find("no data in this run") != std::string::npos);
  const std::string accuracy = line_chart(ChartFrame{"a", "Accuracy", "epoch", "accuracy", true}, {empty});  // a run without data.val
  CHECK(accuracy.find(">0%<") != std::string::npos);
  CHECK(accuracy.find("-0%") == std::string::npos);  // a tick computed as -0.0
}

TEST_CASE("a stacked chart's layers lie on each other and its top edge is their sum", "[observe]") {
  ChartSeries lower{"forward", "#111111", {}, {1, 1}};
  ChartSeries upper{"backward", "#222222", {}, {2, 3}};
  const std::string svg = stacked_area_chart(ChartFrame{"b", "Breakdown"}, {10, 20}, {lower, upper});
  const auto low = path_points(svg, "forward"), high = path_points(svg, "backward");
  REQUIRE(low.size() == 4);
  REQUIRE(high.size() == 4);
  // The upper layer's bottom edge (its last two points, drawn back) is the lower layer's top.
  CHECK(high[3].second == Approx(low[0].second));
  CHECK(high[2].second == Approx(low[1].second));
  // Pixels per unit from the lower layer (0 -> 1), then the top edge at x=20 sits at 1 + 3 = 4.
  const double zero = low[3].second, per_unit = zero - low[0].second;
  CHECK(high[1].second == Approx(zero - 4 * per_unit).margin(0.2));
  CHECK(high[0].second == Approx(zero - 3 * per_unit).margin(0.2));
}

TEST_CASE("a stack over a single step is a column of its layers, and a step axis has whole ticks", "[observe]") {
  ChartSeries lower{"forward", "#111111", {}, {1}};
  ChartSeries upper{"backward", "#222222", {}, {3}};
  const std::string svg = stacked_area_chart(ChartFrame{"b", "Breakdown", "step", "s", false, true, true}, {8}, {lower, upper});
  const std::regex rect("<rect class=\"series\" x=\"[0-9.]+\" y=\"([0-9.]+)\" width=\"[0-9.]+\" height=\"([0-9.]+)\"");
  std::vector<double> tops, heights;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), rect); it != std::sregex_iterator(); ++it) {
    tops.push_back(std::stod((*it)[1]));
    heights.push_back(std::stod((*it)[2]));
  }
  REQUIRE(heights.size() == 2);
  CHECK(heights[1] == Approx(3 * heights[0]).epsilon(0.02));
  CHECK(tops[0] == Approx(tops[1] + heights[1]).margin(0.2));  // backward sits on forward
  CHECK(svg.find(">8<") != std::string::npos);
  CHECK(svg.find(">7.5<") == std::string::npos);  // no tick between steps
  CHECK(svg.find(">8.2<") == std::string::npos);
}

TEST_CASE("a stacked bar chart draws one bar per category, its parts in proportion", "[observe]") {
  ChartSeries compute{"forward", "#111111", {}, {0.3, 0.1}};
  ChartSeries wait{"comm", "#222222", {}, {0.1, 0.3}};
  const std::string svg = stacked_bar_chart(ChartFrame{"ranks", "Ranks"}, {"rank 0", "rank 1 <slow>"}, {compute, wait});
  CHECK(occurrences(svg, "<rect class=\"series\"") == 4);
  CHECK(svg.find("rank 1 &lt;slow&gt;") != std::string::npos);
  const std::regex rect("<rect class=\"series\" x=\"[0-9.]+\" y=\"[0-9.]+\" width=\"([0-9.]+)\"");
  std::vector<double> widths;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), rect); it != std::sregex_iterator(); ++it) widths.push_back(std::stod((*it)[1]));
  REQUIRE(widths.size() == 4);
  CHECK(widths[0] == Approx(3 * widths[1]).epsilon(0.02));
  CHECK(widths[0] + widths[1] == Approx(widths[2] + widths[3]).epsilon(0.02));
}

TEST_CASE("a tile's detail wraps a long recipe key at its dots, escaped, and leaves numbers whole", "[observe]") {
  const std::string tile = html_tile("best top1", "81.50%", "trial-0005: optim.lr=0.0394 augment.label_smoothing=0.0 <x>");
  CHECK_THAT(tile, Catch::Contains("optim.<wbr>lr=0.0394 augment.<wbr>label_smoothing=0.0 &lt;x&gt;"));
  CHECK(tile.find("0.<wbr>") == std::string::npos);
}

TEST_CASE("the report page holds every section, escapes what it shows and fetches nothing", "[observe]") {
  TempDir dir;
  std::string metrics;
  for (int step = 5; step <= 20; step += 5)
    metrics += "{\"kind\": \"train\", \"epoch\": 1, \"step\": " + std::to_string(step) +
               ", \"loss\": 1.5, \"lr\": 0.1, \"images_per_s\": 900, \"step_s\": 0.1, \"breakdown_steps\": 5, \"data_s\": 0.05, "
               "\"forward_s\": 0.03, \"backward_s\": 0.02, \"rank_own_s_min\": 0.09, \"rank_own_s_median\": 0.1, \"rank_own_s_max\": 0.12}\n";
  metrics += R"J({"kind": "epoch", "epoch": 1, "step": 20, "images_per_s": 880, "peak_memory_mb": 120, "peak_memory_mb_per_rank": "110.0 120.0", "val_loss": 1.2, "top1": 0.61, "top5": 0.9})J" "\n";
  dir.write("run/metrics.jsonl", metrics);
  dir.write("run/recipe.yaml", "model:\n  arch: small_cnn  # <b>\n");
  dir.write("run/perf_summary.json", R"J({"utilisation": {"steps": 20, "step_s": 0.1, "images_per_s": 900, "tflops": 0.05},
    "ranks": [{"rank": 0, "label": "rank 0 (host a)", "score": 1, "data": 0.05, "forward": 0.03},
              {"rank": 1, "label": "rank 1 (host b)", "score": 0.8, "data": 0.07, "forward": 0.03}],
    "verdicts": [{"kind": "input_bound", "value": 0.5, "message": "input-bound: set data.workers: 4 & retry"}]})J");
  dir.write("run/provenance.json", R"J({"started_at": "2026-12-01T10:00:00Z", "world_size": 2, "device": "cpu", "ranks": ["rank 0 (host a)", "rank 1 (host b)"]})J");
  dir.write("run/preflight.json", R"J({"device": "cpu", "ranks": [{"rank": 0, "label": "rank 0 (host a)", "matmul_tflops": 0.07,
    "pipeline_images_per_s": 128, "model_images_per_s": 18000}], "allreduce": {"allreduce_mb": 0, "gradient_mb": 1},
    "findings": [{"kind": "input_short", "value": 0.01, "message": "input pipeline too slow: rank 0 (host a) prepares 128 images/s"}]})J");
  dir.write("run/eval.json", R"J({"top1": 0.6, "samples": 30, "data": "/d/val", "weights": "/w.safetensors",
    "per_class": [{"class": "cat", "samples": 10, "top1": 0.9}, {"class": "dog & co", "samples": 20, "top1": 0.45}, {"class": "emu", "samples": 0, "top1": 0}],
    "confusions": [{"true": "dog & co", "predicted": "cat", "count": 11}]})J");
  const std::string html = run_report_html(read_run_history(dir.file("run")), "2026-12-01T11:00:00Z");
  CHECK(html.find("<h2>Per class (cvtrain eval)</h2>\n<p class=\"sub\">top-1 60.00% on 30 samples of /d/val") != std::string::npos);
  // Lowest first, a bar as long as the top-1; a class without samples is not ranked.
  CHECK(html.find("<h3>Lowest top-1 (2 of 2 classes)</h3>") != std::string::npos);
  const auto dog = html.find(
      "<tr><td>dog &amp; co</td><td>20</td><td><span class=\"track\"><span class=\"bar\" style=\"width:45.0%\"></span></span> "
      "45.00%</td></tr>");
  const auto cat = html.find(
      "<tr><td>cat</td><td>10</td><td><span class=\"track\"><span class=\"bar\" style=\"width:90.0%\"></span></span> 90.00%</td></tr>");
  CHECK(dog < cat);
  CHECK(cat != std::string::npos);
  CHECK(html.find("<tr><td>dog &amp; co</td><td>cat</td><td>11</td><td>55%</td></tr>") != std::string::npos);
  // The file training writes says so, and the heading with it.
  std::string by_training = cvtrain::testing::read_text(dir.file("run/eval.json"));
  by_training.insert(1, "\"by\": \"training\", ");
  dir.write("run/eval.json", by_training);
  const std::string trained = run_report_html(read_run_history(dir.file("run")), "2026-12-01T11:00:00Z");
  CHECK(trained.find("<h2>Per class (the last evaluation of training)</h2>") != std::string::npos);
  CHECK(trained.find("(cvtrain eval)") == std::string::npos);
  CHECK(html.find("<span class=\"kind\">preflight</span> input pipeline too slow: rank 0 (host a)") != std::string::npos);
  CHECK(html.find("<td>rank 0 (host a)</td><td>0.07</td><td>—</td><td>128</td><td>18000</td>") != std::string::npos);
  for (const char* chart : {"loss", "accuracy", "throughput", "lr", "breakdown", "rank_spread", "rank_bars", "memory"})
    CHECK(html.find(std::string("data-chart=\"") + chart + "\"") != std::string::npos);
  CHECK(html.find("input-bound: set data.workers: 4 &amp; retry") != std::string::npos);
  CHECK(html.find("arch: small_cnn  # &lt;b&gt;") != std::string::npos);
  CHECK(html.find("rank 1 (host b) · 0.80") != std::string::npos);
  CHECK(html.find("2 rank(s) on cpu") != std::string::npos);
  CHECK(html.find("61.00%") != std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("http") == std::string::npos);  // no address to fetch: the page opens offline
  CHECK(html.find(" src=") == std::string::npos);
}

TEST_CASE("a start that failed says so first with the first rank's error, and earlier starts' failures are told apart", "[observe]") {
  TempDir dir;
  dir.write("run/metrics.jsonl", "");
  dir.write("run/provenance.json", R"J({"started_at": "2026-12-01T10:00:00Z", "world_size": 2, "device": "cpu"})J");
  dir.write("run/failures.jsonl",
            R"J({"who": "launcher", "host": "a", "time": "2026-12-01T09:00:00Z", "message": "rank 1 was killed by signal 9 (Killed)"})J" "\n"
            R"J({"who": "rank 1", "host": "b", "time": "2026-12-01T10:05:00Z", "message": "data.train: 2 of 120 samples <unreadable>"})J" "\n"
            R"J({"who": "rank 0", "host": "a", "time": "2026-12-01T10:05:01Z", "message": "gradient all-reduce failed"})J" "\n");
  const std::string html = run_report_html(read_run_history(dir.file("run")), "2026-12-01T11:00:00Z");
  CHECK_THAT(html, Catch::Contains("failed · 2 rank(s) on cpu"));
  CHECK_THAT(html, Catch::Contains("<span class=\"kind\">failed</span> rank 1 on b at 2026-12-01T10:05:00Z: data.train: 2 of 120 samples "
                                   "&lt;unreadable&gt; (1 more line(s) after it in failures.jsonl)"));
  CHECK_THAT(html, Catch::Contains("<span class=\"kind\">earlier</span> 1 failure line(s) of earlier starts, the first launcher at "
                                   "2026-12-01T09:00:00Z: rank 1 was killed by signal 9"));
  CHECK_THAT(html, !Catch::Contains("not yet") && !Catch::Contains("No bottleneck"));
  // A later start that has not failed (a restart after the kill): running, the kill told as earlier.
  dir.write("run/failures.jsonl",
            R"J({"who": "launcher", "host": "a", "time": "2026-12-01T09:00:00Z", "message": "rank 1 was killed by signal 9 (Killed)"})J" "\n");
  const std::string restarted = run_report_html(read_run_history(dir.file("run")), "2026-12-01T11:00:00Z");
  CHECK_THAT(restarted, Catch::Contains("running or stopped before its end") && Catch::Contains("kind\">earlier</span>") &&
                            !Catch::Contains("kind\">failed</span>"));
}

TEST_CASE("a segmentation run's report shows its mIoU, the epochs' scores and each class's IoU, lowest first", "[observe]") {
  TempDir dir;
  dir.write(
      "run/metrics.jsonl",
      R"J({"kind": "epoch", "epoch": 1, "step": 32, "images_per_s": 20, "val_loss": 0.3, "miou": 0.63, "pixel_acc": 0.88, "macc": 0.79})J"
      "\n"
      R"J({"kind": "epoch", "epoch": 2, "step": 64, "images_per_s": 20, "val_loss": 0.2, "miou": 0.75, "pixel_acc": 0.93, "macc": 0.84})J"
      "\n");
  dir.write("run/best/best.json", R"J({"metric": "miou", "score": 0.75, "epoch": 2, "step": 64, "miou": 0.75, "loss": 0.2})J");
  dir.write("run/eval.json", R"J({"task": "segmentation", "miou": 0.75, "pixel_acc": 0.93, "macc": 0.84, "loss": 0.2, "samples": 128,
    "data": "/d/val.txt", "weights": "/w", "by": "training", "class_iou": {"background": 0.95, "disc & co": 0.55, "ghost": null}})J");
  const std::string html = run_report_html(read_run_history(dir.file("run")), "2026-12-07T11:00:00Z");
  CHECK(html.find(">mIoU<") != std::string::npos);
  CHECK(html.find("75.00%") != std::string::npos);
  CHECK(html.find("best 75.00% at epoch 2, its checkpoint in best/") != std::string::npos);
  CHECK(html.find("data-chart=\"miou\"") != std::string::npos);
  CHECK(html.find("data-chart=\"accuracy\"") == std::string::npos);  // no top-1 chart for a run without top-1
  CHECK(html.find("<h2>IoU by class (the last evaluation of training)</h2>") != std::string::npos);
  const auto low = html.find("<tr><td>disc &amp; co</td>"), high = html.find("<tr><td>background</td>"),
             none = html.find("<tr><td>ghost</td><td>— (neither present nor predicted)</td></tr>");
  CHECK(low < high);
  CHECK(high < none);
  CHECK(none != std::string::npos);
}
