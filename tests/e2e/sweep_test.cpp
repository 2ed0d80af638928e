// End to end: `cvtrain sweep` on the quickstart, two trials at a time on this machine's cores: a
// grid whose trials with broken data or a diverging learning rate fail (recorded, the sweep goes
// on), a sweep stopped mid-way and one killed with SIGKILL, each started again (no finished trial
// rerun, the interrupted ones resumed, bit for bit), ASHA, the results best first, and a bad space
// refused before any trial starts.
#include "torch_catch.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <filesystem>
#include <regex>

#include "run_shell.h"
#include "saved_models.h"

using cvtrain::testing::max_checkpoint_difference;
using cvtrain::testing::numbers_after;
using cvtrain::testing::occurrences;
using cvtrain::testing::read_text;
using cvtrain::testing::shell;
using cvtrain::testing::TempDir;

namespace {

const std::string kTrial = " data.max_samples=256 data.max_val_samples=200 train.global_batch=64 train.epochs=2 data.workers=1";

}  // namespace

TEST_CASE("a sweep runs its grid two at a time, records failed trials, and resumes where it was stopped", "[e2e][ranks]") {
  TempDir dir;
  dir.write("broken.gz", "this is not an IDX file");
  const std::string space = dir.write("space.yaml", "space:\n"
                                                    "  optim.lr: {grid: [0.02, 0.1, 1.0e+30]}\n"
                                                    "  data.train: [/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz, " +
                                                        dir.file("broken.gz") + "]\n"
                                                    "sampler: grid\n"
                                                    "trials: 0\n"
                                                    "parallel: 2\n");
  // lr 1e30 diverges at step 2: with max_bad_steps 1 that trial fails mid-run, before the stop at step 3.
  const std::string sweep = "$CVTRAIN sweep --recipe $RECIPE --space " + space + " --out " + dir.file("sweep") + kTrial + " train.max_bad_steps=1";
  const auto run = shell("CVTRAIN_STOP_AT_STEP=3 " + sweep + "\necho \"first exit $?\"\n" + sweep + "\necho \"second exit $?\"\n" +
                             // With the trials' share of the cores: thread counts change how CPU kernels sum.
                             "OMP_NUM_THREADS=1 $CVTRAIN --recipe $RECIPE" + kTrial + " optim.lr=0.1 output=" + dir.file("straight") +
                             " > /dev/null 2>&1\n",
                         dir);
  INFO(run.output);
  CHECK_THAT(run.output, Catch::Contains("first exit 75") && Catch::Contains("second exit 0"));
  const std::string log = read_text(dir.file("sweep/sweep.jsonl"));
  // Six trials, each started once; the three with broken data failed at their start and the
  // diverging one mid-run, once each, and none was run again.
  CHECK(occurrences(log, "\"event\": \"start\"") == 6);
  CHECK(occurrences(log, "\"status\": \"failed\"") == 4);
  CHECK(occurrences(log, "\"status\": \"stopped\"") == 2);
  CHECK(occurrences(log, "\"status\": \"done\"") == 2);
  CHECK_THAT(log, Catch::Contains("\"trial\": 1, \"status\": \"failed\", \"exit_code\": 2"));
  // Its message is the one its rank recorded in the trial's failures.jsonl, named by rank.
  CHECK_THAT(log, Catch::Contains("\"trial\": 4, \"status\": \"failed\", \"exit_code\": 1") &&
                      Catch::Contains("exit code 1: rank 0: ") && Catch::Contains("1 steps in a row had non-finite loss or gradients"));
  CHECK_THAT(read_text(dir.file("sweep/trial-0001.log")), Catch::Contains("broken.gz"));
  // The interrupted trial continued from its checkpoint to what one straight run computes.
  CHECK(max_checkpoint_difference(dir.file("sweep/trial-0002/checkpoints/step-00000008/model.safetensors"),
                                  dir.file("straight/checkpoints/step-00000008/model.safetensors")) == 0);
  // results.md: best first, and the best is the trial whose own metrics say so.
  const std::string results = read_text(dir.file("sweep/results.md"));
  const double top1_a = numbers_after(read_text(dir.file("sweep/trial-0000/metrics.jsonl")), "top1").back();
  const double top1_b = numbers_after(read_text(dir.file("sweep/trial-0002/metrics.jsonl")), "top1").back();
  const std::string best = top1_a >= top1_b ? "trial-0000" : "trial-0002";
  std::smatch first_row;
  REQUIRE(std::regex_search(results, first_row, std::regex(R"(\| 1 \| (trial-\d+) \| done \| ([0-9.]+) \|)")));
  CHECK(first_row[1] == best);
  CHECK(std::stod(first_row[2]) == Approx(std::max(top1_a, top1_b)).margin(1e-4));  // the table prints 4 decimals (5e-5 off at most)
  CHECK_THAT(results, Catch::Contains("| failed |") && Catch::Contains("exit code 2"));
}

TEST_CASE("a bad search space or a candidate recipe that does not load stops a sweep before any trial", "[e2e]") {
  TempDir dir;
  // `cvtrain sweep` of the quickstart over the space `text` (written as `name`), into its own folder.
  const auto sweep = [&](const std::string& name, const std::string& text, const std::string& overrides = "") {
    return shell("$CVTRAIN sweep --recipe $RECIPE " + overrides + " --space " + dir.write(name, text) + " --out " + dir.file(name + ".sweep"),
                 dir);
  };
  const auto unknown = sweep("space.yaml", "space: {optim.lrr: [0.1]}\n");
  CHECK(unknown.exit_code == 2);
  CHECK_THAT(unknown.output, Catch::Contains("space.yaml:1: optim.lrr: not a recipe key (did you mean 'optim.lr'?)"));
  const auto bad_value = sweep("bad_value.yaml", "space: {optim.name: [sgd, adamm]}\nsampler: grid\ntrials: 0\n");
  CHECK(bad_value.exit_code == 2);
  CHECK_THAT(bad_value.output, Catch::Contains("bad_value.yaml:1: optim.name: 'adamm' is not one of") && Catch::Contains("did you mean 'adamw'?"));
  // A value of its key that the rest of the recipe refuses: the candidate names the trial.
  const auto rejected = sweep("bad_pair.yaml", "space: {optim.name: [sgd, lamb]}\nsampler: grid\ntrials: 0\n", "strategy=zero2");
  CHECK(rejected.exit_code == 2);
  CHECK_THAT(rejected.output, Catch::Contains("trial-0001 (optim.name=lamb)") && Catch::Contains("lamb's trust ratio needs each parameter's whole norm"));
  CHECK_FALSE(std::filesystem::exists(dir.file("bad_value.yaml.sweep/trial-0000")));
  CHECK_FALSE(std::filesystem::exists(dir.file("bad_pair.yaml.sweep/trial-0000")));
  // A recipe's sweep: section: cvtrain check reports its mistakes too, with the recipe's line.
  const std::string recipe = dir.write("r.yaml", "base: " + cvtrain::testing::kQuickstart + "\nsweep:\n  space: {optim.lr: {uniform: [0.3, 0.1]}}\n");
  const auto check = shell("$CVTRAIN check --no-paths --recipe " + recipe, dir);
  CHECK(check.exit_code == 2);
  CHECK_THAT(check.output, Catch::Contains("r.yaml:3: optim.lr: the range [0.3, 0.1] is empty"));
}

TEST_CASE("a sweep given wholly as sweep.* overrides runs its grid, and training refuses those keys saying whose they are", "[e2e]") {
  TempDir dir;
  const auto run = shell("$CVTRAIN sweep --recipe $RECIPE" + kTrial +
                             " train.epochs=1 'sweep.space.optim.lr=[0.05,0.1]' sweep.sampler=grid sweep.trials=0 --out " + dir.file("s"),
                         dir);
  INFO(run.output);
  CHECK(run.exit_code == 0);
  CHECK_THAT(read_text(dir.file("s/results.md")),
             Catch::StartsWith("# Sweep of") && Catch::Contains("over sweep.space.optim.lr=[0.05,0.1] sweep.sampler=grid sweep.trials=0") &&
                 Catch::Contains("| 0.05 |") && Catch::Contains("| 0.1 |"));
  CHECK(occurrences(read_text(dir.file("s/sweep.jsonl")), "\"status\": \"done\"") == 2);
  // Another grid into the same folder: refused, showing both spaces.
  const auto other = shell(
      "$CVTRAIN sweep --recipe $RECIPE 'sweep.space.optim.lr=[0.05,0.2]' sweep.sampler=grid sweep.trials=0 --out " + dir.file("s"), dir);
  CHECK(other.exit_code == 1);
  CHECK_THAT(other.output, Catch::Contains(dir.file("s") + " holds a sweep of another search space: " + dir.file("s/space.yaml") +
                                           " has\n  {space: {optim.lr: [0.05, 0.1]}, sampler: grid, trials: 0}\nand this sweep's, from "
                                           "sweep.space.optim.lr=[0.05,0.2] sweep.sampler=grid sweep.trials=0, is\n  {space: {optim.lr: "
                                           "[0.05, 0.2]}, sampler: grid, trials: 0}"));
  const auto train = shell("$CVTRAIN --recipe $RECIPE sweep.trials=3", dir);
  CHECK(train.exit_code == 2);
  CHECK_THAT(train.output, Catch::Contains("sweep.trials: unknown key; sweep.* keys are for `cvtrain sweep"));
}

TEST_CASE("ASHA stops at least half the trials early, and a promoted trial continues exactly", "[e2e][ranks]") {
  TempDir dir;
  const std::string space = dir.write("space.yaml", "space:\n"
                                                    "  optim.lr: {loguniform: [1.0e-3, 0.3]}\n"
                                                    "sampler: random\n"
                                                    "trials: 8\n"
                                                    "parallel: 2\n"
                                                    "seed: 5\n"
                                                    "early_stopping: {grace: 1, reduction: 2}\n");
  const std::string trial = " data.max_samples=256 data.max_val_samples=200 train.global_batch=64 train.epochs=4 data.workers=1";
  const auto run = shell("$CVTRAIN sweep --recipe $RECIPE --space " + space + " --out " + dir.file("sweep") + trial, dir);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const std::string log = read_text(dir.file("sweep/sweep.jsonl"));
  const int stopped_early = occurrences(log, "\"status\": \"stopped early\""), done = occurrences(log, "\"status\": \"done\"");
  CHECK(stopped_early >= 4);
  CHECK(stopped_early + done == 8);
  CHECK(occurrences(log, "\"rung\": 0, \"epoch\": 1") == 8);  // every trial reached the first rung
  CHECK_THAT(run.output, Catch::Contains("early stopping: " + std::to_string(stopped_early) + " of 8 trials stopped early"));
  // The best trial ran all 4 epochs through two pauses; a straight run with its values computes the same weights.
  std::smatch best;
  const std::string results = read_text(dir.file("sweep/results.md"));
  REQUIRE(std::regex_search(results, best, std::regex(R"(\| 1 \| trial-(\d+) \| done \| ([0-9.]+) \| ([0-9.e-]+) \|)")));
  const std::string name = "trial-" + std::string(best[1]);
  // It is the finished trial whose own last epoch has the highest top-1.
  double best_top1 = -1;
  std::string best_name;
  for (int i = 0; i < 8; ++i) {
    const std::string trial_name = fmt::format("trial-{:04d}", i);
    const std::vector<double> top1 = numbers_after(read_text(dir.file("sweep/" + trial_name + "/metrics.jsonl")), "top1");
    if (log.find(fmt::format("\"trial\": {}, \"status\": \"done\"", i)) == std::string::npos || top1.empty()) continue;
    if (top1.back() > best_top1) best_top1 = top1.back(), best_name = trial_name;
  }
  CHECK(name == best_name);
  CHECK(std::stod(best[2]) == Approx(best_top1).margin(1e-4));  // the table prints 4 decimals (5e-5 off at most)
  // best_recipe.yaml is that trial's recipe with a folder of its own.
  CHECK_THAT(read_text(dir.file("sweep/best_recipe.yaml")), Catch::Contains("# The best trial of this sweep, " + name) &&
                                                             Catch::Contains("output: " + dir.file("sweep/best")));
  CHECK(occurrences(read_text(dir.file("sweep/" + name + ".log")), "resuming from") == 2);
  // Each start keeps the earlier metrics as metrics.N.jsonl: 4 epoch records in all, none evaluated twice.
  int epochs = 0;
  for (const auto& file : std::filesystem::directory_iterator(dir.file("sweep/" + name)))
    if (file.path().filename().string().rfind("metrics", 0) == 0) epochs += occurrences(read_text(file.path().string()), "\"kind\": \"epoch\"");
  CHECK(epochs == 4);
  const auto straight = shell("OMP_NUM_THREADS=1 $CVTRAIN --recipe $RECIPE" + trial + " optim.lr=" + std::string(best[3]) + " output=" +
                                  dir.file("straight") + " > /dev/null 2>&1",
                              dir);
  REQUIRE(straight.exit_code == 0);
  CHECK(max_checkpoint_difference(dir.file("sweep/" + name + "/checkpoints/step-00000016/model.safetensors"),
                                  dir.file("straight/checkpoints/step-00000016/model.safetensors")) == 0);
}

TEST_CASE("a sweep killed with SIGKILL and started again reruns no finished trial and resumes the running ones", "[e2e][ranks]") {
  TempDir dir;
  const std::string space = dir.write("space.yaml", "space: {optim.lr: {grid: [0.02, 0.05, 0.1, 0.2]}}\nsampler: grid\ntrials: 0\nparallel: 2\n");
  const std::string sweep = "$CVTRAIN sweep --recipe $RECIPE --space " + space + " --out " + dir.file("sweep") +
                            " data.max_samples=2048 data.max_val_samples=200 train.epochs=2 train.global_batch=64 data.workers=1 "
                            "train.log_every=5";
  // Killed once the first trials have finished and the next two are past step 5: the trials it
  // leaves behind get SIGTERM (they die with it), save a checkpoint and stop.
  const auto run = shell(sweep + " > " + dir.file("first.log") + " 2>&1 &\n"
                                 "pid=$!\n"
                                 "for _ in $(seq 900); do grep -qs 'step 5/' " + dir.file("sweep/trial-0002.log") + " && grep -qs 'step 5/' " +
                             dir.file("sweep/trial-0003.log") + " && break; sleep 0.1; done\n"
                                 "kill -9 $pid; wait $pid; echo \"first exit $?\"\n"
                                 // Both orphaned trials have saved and stopped before the sweep starts again.
                                 "for _ in $(seq 300); do grep -qs 'stopped on request' " + dir.file("sweep/trial-0002.log") +
                             " && grep -qs 'stopped on request' " + dir.file("sweep/trial-0003.log") + " && break; sleep 0.1; done\n"
                             "sleep 0.5\n" +
                             sweep + "\necho \"second exit $?\"\n",
                         dir);
  INFO(run.output << read_text(dir.file("first.log")));
  CHECK_THAT(run.output, Catch::Contains("first exit 137") && Catch::Contains("second exit 0"));
  const std::string log = read_text(dir.file("sweep/sweep.jsonl"));
  CHECK(occurrences(log, "\"event\": \"start\"") == 4);  // each trial started once
  CHECK(occurrences(log, "\"status\": \"done\"") == 4);
  int resumed = 0;
  for (int i = 0; i < 4; ++i) resumed += occurrences(read_text(dir.file(fmt::format("sweep/trial-{:04d}.log", i))), "resuming from");
  CHECK(resumed == 2);  // the two that were training when the sweep was killed, and no other
}
