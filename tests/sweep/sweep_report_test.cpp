// The sweep report read from a sweep folder as `cvtrain sweep` leaves it: trials from sweep.jsonl,
// each trial's curve from every start's metrics file, the charts' series and the table's order;
// the browser check is the e2e test's.
#include <catch2/catch.hpp>

#include <regex>

#include "cvtrain/core/error.h"
#include "cvtrain/sweep/sweep_report.h"
#include "temp_dir.h"

using namespace cvtrain;
using cvtrain::testing::occurrences;
using cvtrain::testing::TempDir;

namespace {

std::string epoch_line(int epoch, double top1) {
  return "{\"kind\": \"epoch\", \"epoch\": " + std::to_string(epoch) + ", \"step\": " + std::to_string(4 * epoch) +
         ", \"top1\": " + std::to_string(top1) + "}\n";
}

// Three trials of a random lr x model search with ASHA (rungs 1, 2): trial 0 finished best after a
// pause (two metrics files), trial 1 finished, trial 2 stopped early after epoch 1, trial 3 failed.
void write_sweep(const TempDir& dir) {
  dir.write("sweep/space.yaml", "space:\n  optim.lr: {loguniform: [1.0e-3, 1.0]}\n  model.arch: [small_cnn, mlp]\n"
                                "sampler: random\ntrials: 4\nparallel: 2\nearly_stopping: {grace: 1, reduction: 2}\n");
  dir.write("sweep/sweep.jsonl",
            R"({"event": "start", "trial": 0, "values": {"optim.lr": "0.1", "model.arch": "small_cnn"}, "launcher": "srun -N1 -n1 -c1", "time": "t"}
{"event": "start", "trial": 1, "values": {"optim.lr": "0.01", "model.arch": "mlp"}, "launcher": "srun -N1 -n1 -c1", "time": "t"}
{"event": "rung", "trial": 0, "rung": 0, "epoch": 1, "metric": 0.7, "time": "t"}
{"event": "rung", "trial": 1, "rung": 0, "epoch": 1, "metric": 0.6, "time": "t"}
{"event": "start", "trial": 2, "values": {"optim.lr": "0.001", "model.arch": "mlp"}, "time": "t"}
{"event": "rung", "trial": 2, "rung": 0, "epoch": 1, "metric": 0.2, "time": "t"}
{"event": "rung", "trial": 0, "rung": 1, "epoch": 2, "metric": 0.8, "time": "t"}
{"event": "end", "trial": 0, "status": "done", "exit_code": 0, "metric": 0.8, "seconds": 12.0, "message": "", "time": "t"}
{"event": "rung", "trial": 1, "rung": 1, "epoch": 2, "metric": 0.65, "time": "t"}
{"event": "end", "trial": 1, "status": "done", "exit_code": 0, "metric": 0.65, "seconds": 11.0, "message": "", "time": "t"}
{"event": "start", "trial": 3, "values": {"optim.lr": "0.5", "model.arch": "mlp"}, "time": "t"}
{"event": "end", "trial": 3, "status": "failed", "exit_code": 2, "metric": null, "seconds": 1.0, "message": "exit code 2: bad data", "time": "t"}
{"event": "end", "trial": 2, "status": "stopped early", "exit_code": 0, "metric": 0.2, "seconds": 5.0, "message": "stopped early after epoch 1", "time": "t"}
)");
  dir.write("sweep/trial-0000/metrics.1.jsonl", epoch_line(1, 0.7));
  dir.write("sweep/trial-0000/metrics.jsonl", epoch_line(2, 0.8));
  dir.write("sweep/trial-0000/recipe.yaml", "model:\n  arch: small_cnn\noptim:\n  lr: 0.1\n");
  dir.write("sweep/trial-0001/metrics.jsonl", epoch_line(1, 0.6) + epoch_line(2, 0.65));
  dir.write("sweep/trial-0002/metrics.jsonl", epoch_line(1, 0.2));
}


// The svg of chart `id`.
std::string chart(const std::string& html, const std::string& id) {
  const size_t start = html.find("data-chart=\"" + id + "\"");
  REQUIRE(start != std::string::npos);
  return html.substr(start, html.find("</svg>", start) - start);
}

}  // namespace

TEST_CASE("a sweep folder reads back with every trial, each start's epochs and the best trial's recipe", "[sweep]") {
  TempDir dir;
  write_sweep(dir);
  CHECK(is_sweep_folder(dir.file("sweep")));
  CHECK_FALSE(is_sweep_folder(dir.file("sweep/trial-0000")));
  const SweepHistory sweep = read_sweep_history(dir.file("sweep"));
  REQUIRE(sweep.trials.size() == 4);
  CHECK(sweep.epochs.at(0).size() == 2);  // metrics.1.jsonl, then metrics.jsonl
  CHECK(sweep.best_trial == "trial-0000");
  CHECK(sweep.best_recipe_yaml.find("arch: small_cnn") != std::string::npos);
  CHECK(sweep.trials[0].launcher == "srun -N1 -n1 -c1");
  CHECK_THROWS_WITH(read_sweep_history(dir.file("sweep/trial-0000")), Catch::Contains("not a sweep folder (no sweep.jsonl)"));
}

TEST_CASE("the sweep report draws every trial's curve, the metric against each key, and the trials best first", "[sweep]") {
  TempDir dir;
  write_sweep(dir);
  const std::string html = sweep_report_html(read_sweep_history(dir.file("sweep")), "now");
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("http") == std::string::npos);
  // Curves: three trials with epochs (the failed one has none), the best in red, the stopped one dashed.
  const std::string curves = chart(html, "curves");
  CHECK(occurrences(curves, "class=\"series\"") == 3);
  CHECK(occurrences(curves, "<path class=\"series\"") == 2);  // trial 2's one epoch is a marker, not a line
  CHECK(std::regex_search(curves, std::regex("stroke=\"#e45756\" stroke-width=\"2\"><title>trial-0000 \\(best\\)</title>")));
  CHECK(std::regex_search(curves, std::regex("<g class=\"series\"><title>trial-0002 \\(stopped early\\)</title><circle[^>]*fill=\"#9d9d9d\"")));
  // The best trial's curve goes through both starts: two points.
  std::smatch best_path;
  REQUIRE(std::regex_search(curves, best_path, std::regex("d=\"(M[^\"]*)\" fill=\"none\" stroke=\"#e45756\"")));
  CHECK(occurrences(best_path[1], "L") == 1);
  // One scatter per searched key: log10 for the loguniform lr, the choices' indices for the model.
  const std::string lr = chart(html, "key_optim_lr");
  CHECK(lr.find("log10(optim.lr)") != std::string::npos);
  CHECK(occurrences(lr, "<g class=\"series\">") == 3);  // finished, stopped early, best
  CHECK(occurrences(lr, "<circle") == 3);             // three trials have a metric
  CHECK(html.find("0 = small_cnn, 1 = mlp") != std::string::npos);
  // The table: best first, the failed trial last with its message.
  const size_t first = html.find("<td>trial-0000</td>"), second = html.find("<td>trial-0001</td>"),
               third = html.find("<td>trial-0002</td>"), failed = html.find("<td>trial-0003</td>");
  CHECK((first < second && second < third && third < failed));
  CHECK(html.find("exit code 2: bad data") != std::string::npos);
  CHECK(html.find("<td>80.00%</td>") != std::string::npos);
  CHECK(html.find("Best trial: trial-0000") != std::string::npos);
  CHECK(html.find("arch: small_cnn") != std::string::npos);
  // 5 of 8 epochs trained: trials 0 and 1 two each, trial 2 one, the failed none.
  CHECK(html.find("5</div><div class=\"detail\">38% fewer than 4 trials × 2 epochs") != std::string::npos);
}
