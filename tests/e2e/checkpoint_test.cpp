// Checkpoints end to end: a stopped and resumed run equals an uninterrupted one bit for bit, also
// when stopped by a real SIGTERM; resuming on fewer ranks keeps the sample order; incomplete or
// damaged checkpoints are skipped; non-finite steps are skipped and bounded; storage faults are
// clear errors that keep earlier checkpoints.
#include "torch_catch.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "run_shell.h"
#include "saved_models.h"

using cvtrain::testing::mlp_weights;
using cvtrain::testing::port;
using cvtrain::testing::Run;
using cvtrain::testing::shell;
using cvtrain::testing::read_text;
using cvtrain::testing::TempDir;

namespace {



// The "loss" of every per-step line of the metrics files, in order.
std::vector<std::string> step_losses(const std::vector<std::string>& files) {
  std::vector<std::string> losses;
  const std::regex pattern("\"kind\": \"train\"[^\n]*\"loss\": ([-0-9.eE+]+)");
  for (const auto& file : files) {
    const std::string text = read_text(file);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern); it != std::sregex_iterator(); ++it)
      losses.push_back((*it)[1]);
  }
  return losses;
}

}  // namespace

TEST_CASE("2 ranks: 10 steps, stop, resume, 10 steps equals 20 straight, bit for bit", "[e2e][ranks]") {
  TempDir dir;
  // small_cnn has dropout, so the random state has to come back too; and the weight average with
  // BatchNorm statistics (rank 0's, broadcast before each save).
  const std::string common = " data.max_samples=1280 data.val= train.max_steps=20 train.global_batch=64 train.log_every=1"
                             " checkpoint.every_steps=10 strategy=ddp distributed.nproc_per_node=2 data.workers=1 train.ema.decay=0.9";
  const Run run = shell("$CVTRAIN --recipe $RECIPE" + common + " distributed.master_port=" + port() + " output=" + dir.file("straight") +
                            " || exit 1\n"
                            "CVTRAIN_STOP_AT_STEP=10 $CVTRAIN --recipe $RECIPE" + common + " distributed.master_port=" + port() +
                            " output=" + dir.file("resumed") + "\n"
                            "echo \"first part exited $?\"\n"
                            "$CVTRAIN --recipe $RECIPE" + common + " distributed.master_port=" + port() + " output=" + dir.file("resumed") +
                            " || exit 1\n",
                        dir);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.output, Catch::Contains("first part exited 75") && Catch::Contains("stopped on request after step 10 of 20") &&
                             Catch::Contains("resuming from " + dir.file("resumed/checkpoints/step-00000010") + ": step 10 of 20"));
  const auto straight = step_losses({dir.file("straight/metrics.jsonl")});
  const auto resumed = step_losses({dir.file("resumed/metrics.1.jsonl"), dir.file("resumed/metrics.jsonl")});
  REQUIRE(straight.size() == 20);
  CHECK(resumed == straight);
  const std::string final_weights = "/checkpoints/step-00000020/model.safetensors";
  CHECK(read_text(dir.file("straight") + final_weights) == read_text(dir.file("resumed") + final_weights));
  CHECK(read_text(dir.file("straight") + final_weights).size() > 100000);
  const std::string final_average = "/checkpoints/step-00000020/ema.safetensors";
  CHECK(read_text(dir.file("straight") + final_average) == read_text(dir.file("resumed") + final_average));
}

TEST_CASE("resuming 2 ranks on 1 continues the same samples and augmentation draws with the same global batch", "[e2e][ranks]") {
  TempDir dir;
  // An MLP (no dropout, no BatchNorm): only batch composition matters. RandAugment, random erasing
  // and repeated augmentation draw per sample (and per micro-batch, which is the same 32 samples on
  // 2 ranks as in 2 accumulation steps on 1); 2 ranks give (a + b) / 2 and 1 rank a / 2 + b / 2 of
  // the same micro-batches' gradients, equal bit for bit (halving is exact), so the whole run is,
  // with one thread in every process (a matrix product's sums are split among its threads).
  const std::string common = " model.arch=mlp data.max_samples=1280 data.val= train.max_steps=16 train.global_batch=64"
                             " train.micro_batch=32 train.log_every=1 strategy=ddp augment.auto_augment=rand-m9-mstd0.5-inc1"
                             " augment.random_erasing.prob=0.25 augment.repeats=2";
  const Run run = shell("export OMP_NUM_THREADS=1\n$CVTRAIN --recipe $RECIPE" + common + " distributed.nproc_per_node=2 distributed.master_port=" + port() +
                            " output=" + dir.file("straight") + " || exit 1\n"
                            "CVTRAIN_STOP_AT_STEP=7 $CVTRAIN --recipe $RECIPE" + common +
                            " distributed.nproc_per_node=2 distributed.master_port=" + port() + " output=" + dir.file("moved") + "\n"
                            "$CVTRAIN --recipe $RECIPE" + common + " distributed.nproc_per_node=1 distributed.master_port=" + port() +
                            " output=" + dir.file("moved") + " || exit 1\n",
                        dir);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.output, Catch::Contains("16 steps of 64 images (32 x 2 accumulation x 1 ranks)") &&
                             Catch::Contains("step 7 of 16 (epoch 1, 7 of its 20 batches done)"));
  const auto a = mlp_weights(dir.file("straight/model.pt")), b = mlp_weights(dir.file("moved/model.pt"));
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>());
  INFO("max |w_straight - w_moved| = " << worst);
  CHECK(worst == 0);
}

TEST_CASE("SIGTERM to the launcher: every rank finishes its step, one checkpoint, exit 75, then resume", "[e2e][ranks]") {
  TempDir dir;
  const std::string common = " data.max_samples=1280 data.val= train.max_steps=30 train.global_batch=64 train.log_every=1"
                             " strategy=ddp distributed.nproc_per_node=2";
  const Run run = shell("$CVTRAIN --recipe $RECIPE" + common + " distributed.master_port=" + port() + " output=" + dir.file("straight") +
                            " || exit 1\n"
                            "$CVTRAIN --recipe $RECIPE" + common + " distributed.master_port=" + port() + " output=" + dir.file("sig") +
                            " &\n"
                            "pid=$!\n"
                            "for i in $(seq 600); do grep -q '\"step\": 5,' " + dir.file("sig/metrics.jsonl") +
                            " 2>/dev/null && break; sleep 0.1; done\n"
                            "kill -TERM $pid\n"
                            "wait $pid\n"
                            "echo \"stopped with $?\"\n"
                            "pgrep -f '" + dir.file("sig") + "' && echo LEFT BEHIND\n"
                            "$CVTRAIN --recipe $RECIPE" + common + " distributed.master_port=" + port() + " output=" + dir.file("sig") +
                            " || exit 1\n",
                        dir);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.output, Catch::Contains("stopped with 75") && Catch::Contains("stopped on request after step") &&
                             Catch::Contains("resuming from"));
  CHECK_THAT(run.output, !Catch::Contains("LEFT BEHIND"));
  const std::string final_weights = "/checkpoints/step-00000030/model.safetensors";
  CHECK(read_text(dir.file("straight") + final_weights) == read_text(dir.file("sig") + final_weights));
}

TEST_CASE("resume skips incomplete and unreadable checkpoints, naming them, and refuses when none reads back", "[e2e]") {
  TempDir dir;
  const std::string common = " data.max_samples=640 data.val= train.global_batch=64 train.log_every=1 checkpoint.every_steps=2 output=" +
                             dir.file("run");
  Run first = shell("$CVTRAIN --recipe $RECIPE" + common + " train.max_steps=6", dir);
  REQUIRE(first.exit_code == 0);
  namespace fs = std::filesystem;
  fs::create_directories(dir.file("run/checkpoints/step-00000008"));
  dir.write("run/checkpoints/step-00000008/model.safetensors", "half");
  fs::resize_file(dir.file("run/checkpoints/step-00000006/model.safetensors"), 1000);
  const Run again = shell("$CVTRAIN --recipe $RECIPE" + common + " train.max_steps=10", dir);
  INFO(again.output);
  REQUIRE(again.exit_code == 0);
  CHECK_THAT(again.output, Catch::Contains("skipping checkpoint " + dir.file("run/checkpoints/step-00000008") + ": incomplete"));
  CHECK_THAT(again.output, Catch::Contains("skipping checkpoint " + dir.file("run/checkpoints/step-00000006") + ": unreadable"));
  CHECK_THAT(again.output, Catch::Contains("resuming from " + dir.file("run/checkpoints/step-00000004")));
  // keep: 3 complete checkpoints remain, the newest three.
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir.file("run/checkpoints"))) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"step-00000006", "step-00000008", "step-00000010"});
  const Run missing = shell("$CVTRAIN --recipe $RECIPE" + common + " train.max_steps=10 checkpoint.resume=" + dir.file("nowhere"), dir);
  CHECK(missing.exit_code == 2);  // a recipe error, before anything is built
  CHECK_THAT(missing.output, Catch::Contains("checkpoint.resume: '" + dir.file("nowhere") + "' is not a folder"));
  // Every complete checkpoint damaged: refused rather than trained over from scratch, the folder as it was.
  for (const std::string& step : left) fs::resize_file(dir.file("run/checkpoints/" + step + "/model.safetensors"), 1000);
  const std::string metrics = read_text(dir.file("run/metrics.jsonl"));
  const Run damaged = shell("$CVTRAIN --recipe $RECIPE" + common + " train.max_steps=12", dir);
  CHECK(damaged.exit_code == 1);
  CHECK_THAT(damaged.output, Catch::Contains(dir.file("run/checkpoints") + ": no complete checkpoint reads back (the newest, " +
                                             dir.file("run/checkpoints/step-00000010")) &&
                                 Catch::Contains("train from scratch on purpose with checkpoint.resume=none"));
  CHECK(read_text(dir.file("run/metrics.jsonl")) == metrics);
}

TEST_CASE("resume takes a given folder or none, and every_minutes saves on the clock", "[e2e]") {
  TempDir dir;
  const std::string common = " data.max_samples=640 data.val= train.global_batch=64 train.log_every=1";
  REQUIRE(shell("$CVTRAIN --recipe $RECIPE" + common + " train.max_steps=6 checkpoint.every_steps=3 output=" + dir.file("a"), dir)
              .exit_code == 0);
  const Run from_path = shell("$CVTRAIN --recipe $RECIPE" + common + " train.max_steps=8 checkpoint.resume=" +
                                  dir.file("a/checkpoints/step-00000003") + " output=" + dir.file("b"), dir);
  INFO(from_path.output);
  REQUIRE(from_path.exit_code == 0);
  CHECK_THAT(from_path.output, Catch::Contains("resuming from " + dir.file("a/checkpoints/step-00000003") + ": step 3 of 8"));
  // A run folder stands for its newest complete checkpoint, as for export and eval.
  const Run from_run = shell("$CVTRAIN --recipe $RECIPE" + common + " train.max_steps=8 checkpoint.resume=" + dir.file("a") +
                                 " output=" + dir.file("d"), dir);
  INFO(from_run.output);
  REQUIRE(from_run.exit_code == 0);
  CHECK_THAT(from_run.output, Catch::Contains("resuming from " + dir.file("a/checkpoints/step-00000006") + ": step 6 of 8"));
  // Another global batch: the epoch continues after the 384 samples done (3 batches of 128), not after 6 batches of 128.
  const Run other_batch = shell("$CVTRAIN --recipe $RECIPE" + common + " train.global_batch=128 train.max_steps=8 checkpoint.resume=" +
                                    dir.file("a") + " output=" + dir.file("e"), dir);
  INFO(other_batch.output);
  REQUIRE(other_batch.exit_code == 0);
  CHECK_THAT(other_batch.output, Catch::Contains("was saved with train.global_batch 64, and this run has 128: epoch 1 continues after "
                                                 "the same 384 samples (3 batches of the new size)"));
  CHECK_THAT(other_batch.output, Catch::Contains("step 6 of 8 (epoch 1, 3 of its 5 batches done)"));
  CHECK_THAT(other_batch.output, Catch::Contains("step 8/8"));
  // Another optimizer: named, with the way to keep only the weights.
  const Run other_optimizer = shell("$CVTRAIN --recipe $RECIPE" + common + " optim.name=adamw train.max_steps=8 checkpoint.resume=" +
                                        dir.file("a") + " output=" + dir.file("f"), dir);
  CHECK(other_optimizer.exit_code == 1);
  CHECK_THAT(other_optimizer.output, Catch::Contains(dir.file("a/checkpoints/step-00000006") + "/optimizer.safetensors does not fit "
                                                     "this run's optimizer (optim.name adamw)") &&
                                         Catch::Contains("model.pretrained=" + dir.file("a/checkpoints/step-00000006") + "/model.safetensors"));
  // Another model: the weights' mismatch, and the recipe change that explains it.
  const Run other_model = shell("$CVTRAIN --recipe $RECIPE" + common + " model.arch=mlp train.max_steps=8 checkpoint.resume=" +
                                    dir.file("a") + " output=" + dir.file("g"), dir);
  CHECK(other_model.exit_code == 1);
  CHECK_THAT(other_model.output, Catch::Contains(dir.file("a/checkpoints/step-00000006") + " was saved with another model (model.arch "
                                                 "small_cnn -> mlp): give this run another output") &&
                                     !Catch::Contains("model.pretrained="));
  const Run fresh = shell("$CVTRAIN --recipe $RECIPE" + common + " train.max_steps=6 checkpoint.resume=none output=" + dir.file("a"), dir);
  REQUIRE(fresh.exit_code == 0);
  CHECK_THAT(fresh.output, !Catch::Contains("resuming") && Catch::Contains("step 1/6"));
  // A clock that is always due: a checkpoint after every step (each takes far more than 6 ms).
  const Run clock = shell("$CVTRAIN --recipe $RECIPE" + common + " train.max_steps=4 checkpoint.every_minutes=0.0001 "
                          "checkpoint.keep=10 output=" + dir.file("c"), dir);
  REQUIRE(clock.exit_code == 0);
  for (int step = 1; step <= 4; ++step)
    CHECK(std::filesystem::exists(dir.file("c/checkpoints/step-0000000" + std::to_string(step) + "/COMPLETE")));
}

TEST_CASE("checkpoint.keep_best keeps the best evaluated epoch in OUTPUT/best, which eval, export and a resume take", "[e2e]") {
  TempDir dir;
  // A constant, too large learning rate: the best epoch is usually an early one (the test reads which).
  // Clipped, since unclipped it diverges to non-finite losses by epoch 3 on some CPUs (an AVX-512 EPYC)
  // and not on others: rounding decides how soon.
  const std::string common =
      " data.max_samples=640 data.max_val_samples=300 train.global_batch=64 optim.lr=0.8 train.grad_clip=2 schedule.name=constant";
  const Run run = shell("$CVTRAIN --recipe $RECIPE" + common + " train.epochs=4 output=" + dir.file("a"), dir);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const std::vector<double> top1 = cvtrain::testing::numbers_after(read_text(dir.file("a/metrics.jsonl")), "top1");
  REQUIRE(top1.size() == 4);
  const auto best = std::max_element(top1.begin(), top1.end());  // the first of equals, as the run keeps the earlier epoch
  const int epoch = static_cast<int>(best - top1.begin()) + 1;
  const std::string folder = dir.file("a/best/step-000000" + std::to_string(10 * epoch));
  const std::string summary = read_text(dir.file("a/best/best.json"));
  INFO(summary);
  CHECK_THAT(summary, Catch::Contains("\"metric\": \"top1\"") && Catch::Contains("\"epoch\": " + std::to_string(epoch) + ",") &&
                          Catch::Contains("\"checkpoint\": \"" + folder + "\""));
  CHECK(cvtrain::testing::numbers_after(summary, "top1").at(0) == Approx(*best).margin(1e-9));  // metrics.jsonl's 9 digits
  CHECK(std::filesystem::exists(folder + "/COMPLETE"));
  int folders = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.file("a/best"))) folders += entry.is_directory() ? 1 : 0;
  CHECK(folders == 1);  // each new best replaced the one before

  // The folder stands for that checkpoint: eval finds its top-1 again, export writes its weights
  // (into a folder it creates).
  const Run evaluated = shell("$CVTRAIN eval --recipe $RECIPE data.max_val_samples=300 --checkpoint " + dir.file("a/best") + " --out " +
                                  dir.file("best_eval.json") + " && $CVTRAIN export " + dir.file("a/best") + " --out " + dir.file("exported/best.safetensors"),
                              dir);
  INFO(evaluated.output);
  REQUIRE(evaluated.exit_code == 0);
  // The same weights on the same samples; 10 and 9 printed digits of one fraction differ by at most 5.5e-10.
  CHECK(cvtrain::testing::numbers_after(read_text(dir.file("best_eval.json")), "top1").at(0) == Approx(*best).margin(1e-9));
  CHECK(std::filesystem::exists(dir.file("exported/best.safetensors")));

  // Resumed, the run judges new epochs against the best it had (here made unbeatable), not afresh.
  std::string unbeatable = std::regex_replace(summary, std::regex("\"score\": [0-9.]+"), "\"score\": 1.000000");
  std::ofstream(dir.file("a/best/best.json")) << unbeatable;
  const Run resumed = shell("$CVTRAIN --recipe $RECIPE" + common + " train.epochs=5 output=" + dir.file("a"), dir);
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(std::filesystem::exists(folder + "/COMPLETE"));
  CHECK_THAT(resumed.output, !Catch::Contains("best top1 so far"));
  CHECK(read_text(dir.file("a/best/best.json")) == unbeatable);
  // The finished run's last checkpoint was saved after its evaluation: the longer run starts at
  // epoch 5 and does not evaluate epoch 4 again.
  CHECK_THAT(resumed.output, Catch::Contains("step 40 of 50 (epoch 5, 0 of its 10 batches done)"));
  CHECK_THAT(resumed.output, !Catch::Contains("the learning rate goes on"));  // a constant rate does not jump
  CHECK(cvtrain::testing::numbers_after(read_text(dir.file("a/metrics.jsonl")), "epoch_s").size() == 1);

  // none: no best folder; top1_ema without train.ema is a recipe error.
  const Run off = shell("$CVTRAIN --recipe $RECIPE" + common + " train.epochs=1 checkpoint.keep_best=none output=" + dir.file("b"), dir);
  REQUIRE(off.exit_code == 0);
  CHECK_FALSE(std::filesystem::exists(dir.file("b/best")));
  const Run no_average = shell("$CVTRAIN check --recipe $RECIPE checkpoint.keep_best=top1_ema", dir);
  CHECK(no_average.exit_code == 2);
  CHECK_THAT(no_average.output, Catch::Contains("checkpoint.keep_best: top1_ema judges the weight average, and train.ema is off"));
}

TEST_CASE("a finished cosine run made longer says how far its learning rate climbs back, and from which weights to start instead",
          "[e2e]") {
  TempDir dir;
  const std::string common = " data.max_samples=640 data.val= train.global_batch=64 schedule.warmup_epochs=0 output=" + dir.file("a");
  REQUIRE(shell("$CVTRAIN --recipe $RECIPE" + common + " train.epochs=1", dir).exit_code == 0);
  // As if saved by another LibTorch on another CPU: the resume says so (other kernels, no longer bit for bit).
  const std::string state = dir.file("a/checkpoints/step-00000010/state.txt");
  std::string saved = read_text(state);
  const auto value_of = [&](const std::string& key) {
    const size_t at = saved.find("\n" + key + " ");
    REQUIRE(at != std::string::npos);
    return saved.substr(at + key.size() + 2, saved.find('\n', at + 1) - at - key.size() - 2);
  };
  const std::string version = value_of("libtorch"), device = value_of("device");
  CHECK_THAT(device, Catch::StartsWith("cpu: "));  // the CPU's model, spaces and all
  saved = std::regex_replace(saved, std::regex("\nlibtorch [^\n]*"), "\nlibtorch 2.10.0");
  std::ofstream(state) << std::regex_replace(saved, std::regex("\ndevice [^\n]*"), "\ndevice cpu: Some Other CPU");
  const Run longer = shell("$CVTRAIN --recipe $RECIPE" + common + " train.epochs=2", dir);
  INFO(longer.output);
  REQUIRE(longer.exit_code == 0);
  CHECK_THAT(longer.output, Catch::Contains("train.epochs 1 -> 2"));
  CHECK_THAT(longer.output,
             Catch::Contains("step-00000010 was saved by another build or device (LibTorch 2.10.0 -> " + version +
                             ", device cpu: Some Other CPU -> " + device + "): the run continues, though no longer bit for bit"));
  // 10 steps an epoch: the 1-epoch cosine had reached 0; stretched over 20 steps it is at half its 0.1 there.
  CHECK_THAT(longer.output,
             Catch::Contains("warning: the learning rate goes on at 0.05 from step 11, where the saved run's schedule had 0:"));
  CHECK_THAT(longer.output, Catch::Contains("model.pretrained=" + dir.file("a/checkpoints/step-00000010") + "/model.safetensors"));
  CHECK(read_text(dir.file("a/checkpoints/step-00000020/state.txt")).find("next_lr 0\n") != std::string::npos);  // the end of its cosine
}

TEST_CASE("non-finite steps are skipped and counted and too many in a row stop the run", "[e2e]") {
  TempDir dir;
  const std::string common = " data.max_samples=640 data.val= train.global_batch=64 train.log_every=1 checkpoint.every_steps=2";
  const Run some = shell("CVTRAIN_NAN_STEPS=3-4 $CVTRAIN --recipe $RECIPE" + common + " train.max_steps=8 output=" + dir.file("some"), dir);
  INFO(some.output);
  REQUIRE(some.exit_code == 0);
  CHECK_THAT(some.output, Catch::Contains("step 4: non-finite loss or gradients") && Catch::Contains("2 in a row"));
  CHECK_THAT(read_text(dir.file("some/metrics.jsonl")), Catch::Contains("\"skipped_steps\": 2"));
  // Log lines of skipped steps have no finite loss to show (null, not a fake 0); the epoch's mean
  // loss leaves them out instead of turning NaN.
  const std::string metrics = read_text(dir.file("some/metrics.jsonl"));
  CHECK_THAT(metrics, Catch::Contains("\"step\": 3, \"loss\": null") && Catch::Contains("\"step\": 4, \"loss\": null") &&
                          Catch::Contains("\"step\": 5, \"loss\": 1.") && !Catch::Contains("\"train_loss\": null"));
  const Run many = shell("CVTRAIN_NAN_STEPS=3-100 $CVTRAIN --recipe $RECIPE" + common +
                             " train.max_steps=20 train.max_bad_steps=3 output=" + dir.file("many"), dir);
  CHECK(many.exit_code == 1);
  CHECK_THAT(many.output, Catch::Contains("3 steps in a row had non-finite loss or gradients (train.max_bad_steps 3)") &&
                              Catch::Contains("Last good checkpoint: " + dir.file("many/checkpoints/step-00000004")));
}

TEST_CASE("storage faults: a blocked checkpoint folder fails before training, a full disk at the save", "[e2e]") {
  TempDir dir;
  const std::string common = " data.max_samples=640 data.val= train.global_batch=64 train.log_every=1 checkpoint.every_steps=2";
  dir.write("blocked/checkpoints", "a file where the folder should be");
  const Run blocked = shell("$CVTRAIN --recipe $RECIPE" + common + " train.max_steps=4 output=" + dir.file("blocked"), dir);
  CHECK(blocked.exit_code == 1);
  CHECK_THAT(blocked.output, Catch::Contains("cannot create the folder") && !Catch::Contains("step 1/"));
  // 600 kB per file: metrics and logs fit, small_cnn's weights (1.7 MB) do not. Ignoring SIGXFSZ
  // turns the limit into a failing write (EFBIG), as a full disk gives ENOSPC.
  Run full = shell("$CVTRAIN --recipe $RECIPE" + common + " train.max_steps=4 output=" + dir.file("full") + " || exit 9\n"
                   "(trap '' XFSZ; ulimit -f 600; exec $CVTRAIN --recipe $RECIPE" + common + " train.max_steps=8 output=" +
                   dir.file("full") + ")",
                   dir);
  INFO(full.output);
  CHECK(full.exit_code == 1);
  CHECK_THAT(full.output, Catch::Contains("checkpoint at step 6 could not be written") && Catch::Contains("are intact"));
  namespace fs = std::filesystem;
  CHECK(fs::exists(dir.file("full/checkpoints/step-00000004/COMPLETE")));
  CHECK_FALSE(fs::exists(dir.file("full/checkpoints/step-00000006")));
  CHECK_FALSE(fs::exists(dir.file("full/checkpoints/step-00000006.tmp")));
}

TEST_CASE("a second run into a folder a run is using is refused, naming the first, and touches nothing", "[e2e]") {
  TempDir dir;
  const std::string common = " data.max_samples=1280 data.val= train.global_batch=64 train.epochs=30 train.log_every=1 output=" + dir.file("run");
  const std::string first_log = dir.file("first.log");
  const Run run = shell("$CVTRAIN --recipe $RECIPE" + common + " > " + first_log + " 2>&1 &\nFIRST=$!\n"
                        "for i in $(seq 600); do grep -q 'step 1/' " + first_log + " && break; sleep 0.1; done\n"
                        "$CVTRAIN --recipe $RECIPE" + common + "; echo \"second: $?\"\n"
                        "kill $FIRST; wait $FIRST; echo \"first: $?\"",
                        dir);
  INFO(run.output);
  CHECK_THAT(run.output, Catch::Contains("second: 1") && Catch::Contains("first: 75"));  // the first stopped as asked, with a checkpoint
  CHECK_THAT(run.output, Catch::Contains(dir.file("run") + " is in use by cvtrain run pid") && Catch::Contains("another folder"));
  CHECK_FALSE(std::filesystem::exists(dir.file("run/metrics.1.jsonl")));  // the first run's metrics were not moved aside
  CHECK_FALSE(std::filesystem::exists(dir.file("run/failures.jsonl")));    // nor its folder told of the second's refusal
}

TEST_CASE("a start that finds the run finished, or cannot resume it, leaves the run folder as it was", "[e2e]") {
  TempDir dir;
  const std::string common = " data.max_samples=640 train.global_batch=64 train.max_steps=4 train.log_every=2 output=" + dir.file("run");
  const Run first = shell("$CVTRAIN --recipe $RECIPE" + common, dir);
  REQUIRE(first.exit_code == 0);
  namespace fs = std::filesystem;
  const auto files = [&] {
    std::map<std::string, std::string> contents;
    for (const auto& entry : fs::directory_iterator(dir.file("run")))
      if (entry.is_regular_file() && entry.path().filename() != ".cvtrain.lock")
        contents[entry.path().filename().string()] = read_text(entry.path().string());
    return contents;
  };
  const std::map<std::string, std::string> before = files();
  REQUIRE(before.count("perf_summary.json") == 1);
  // Another start, as a user reruns the same command with a key changed that does not lengthen it.
  const Run again = shell("$CVTRAIN --recipe $RECIPE" + common + " data.workers=2", dir);
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK_THAT(again.output, Catch::Contains("step-00000004 is the end of this run (step 4 of 4): nothing left to train"));
  CHECK(files() == before);  // no metrics.1.jsonl, no empty event file; recipe.yaml still says data.workers 1
  // One that cannot resume: another model, and a longer run, so that it would train.
  const Run other_model = shell("$CVTRAIN --recipe $RECIPE" + common + " model.arch=mlp train.max_steps=8", dir);
  INFO(other_model.output);
  CHECK(other_model.exit_code == 1);
  CHECK_THAT(other_model.output, Catch::Contains("was saved with another model (model.arch small_cnn -> mlp)"));
  CHECK(files() == before);  // nor a failures.jsonl: the start was refused, as one refused by the lock
  const Run report = shell("$CVTRAIN report " + dir.file("run"), dir);
  CHECK_THAT(report.output, !Catch::Contains("perf_summary.json is not there"));
  CHECK_THAT(read_text(dir.file("run/report.html")), Catch::Contains("finished"));
}

TEST_CASE("kill -9 of one rank with max_restarts 1: the group restarts from the newest checkpoint and ends equal", "[e2e][ranks]") {
  TempDir dir;
  const std::string common = " data.max_samples=1280 data.val= train.max_steps=40 train.global_batch=64 train.log_every=1"
                             " checkpoint.every_steps=5 strategy=ddp distributed.nproc_per_node=2";
  const Run run = shell("$CVTRAIN --recipe $RECIPE" + common + " distributed.master_port=" + port() + " output=" + dir.file("straight") +
                            " || exit 1\n"
                            "$CVTRAIN --recipe $RECIPE" + common + " distributed.max_restarts=1 distributed.master_port=" + port() +
                            " output=" + dir.file("killed") + " &\n"
                            "pid=$!\n"
                            "for i in $(seq 600); do grep -q '\"step\": 8,' " + dir.file("killed/metrics.jsonl") +
                            " 2>/dev/null && break; sleep 0.1; done\n"
                            "kill -9 $(pgrep -P $pid | tail -1)\n"
                            "wait $pid\n"
                            "echo \"job exited $?\"\n",
                        dir);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.output, Catch::Contains("was killed by signal 9") &&
                             Catch::Contains("restarting the group (1 of distributed.max_restarts 1) from the newest checkpoint") &&
                             Catch::Contains("resuming from") && Catch::Contains("job exited 0"));
  const std::string final_weights = "/checkpoints/step-00000040/model.safetensors";
  CHECK(read_text(dir.file("straight") + final_weights) == read_text(dir.file("killed") + final_weights));
  // The killed rank could not say so itself: the launcher did, in the run folder.
  CHECK_THAT(read_text(dir.file("killed/failures.jsonl")), Catch::Contains("\"who\": \"launcher\"") && Catch::Contains("was killed by signal 9"));
}

TEST_CASE("a rank that stops making progress is named and the job stopped", "[e2e][ranks]") {
  TempDir dir;
  // Liveness by timeout(1): were the hang not caught, KILL would end it with 137, not 124.
  const Run run = shell("CVTRAIN_HANG_RANK=1 CVTRAIN_HANG_STEP=4 timeout -s KILL 120 $CVTRAIN --recipe $RECIPE data.max_samples=1280 data.val= "
                        "train.max_steps=40 train.global_batch=64 strategy=ddp distributed.nproc_per_node=2 "
                        "distributed.hang_timeout_s=3 distributed.master_port=" + port() + " output=" + dir.file("run"),
                        dir);
  INFO(run.output);
  CHECK(run.exit_code == 124);
  CHECK_THAT(run.output, Catch::Contains("rank 1 made no progress for 3 s, after step 4, while the others are inside step 5"));
  CHECK_THAT(read_text(dir.file("run/failures.jsonl")), Catch::Contains("\"who\": \"launcher\"") && Catch::Contains("rank 1 made no progress"));
}

TEST_CASE("a collective that times out names itself and the rank on every waiting rank", "[e2e][ranks]") {
  TempDir dir;
  // The hang watch is off: the collective's own timeout (distributed.timeout_s) has to catch it.
  const Run run = shell("CVTRAIN_HANG_RANK=1 CVTRAIN_HANG_STEP=4 timeout -s KILL 120 $CVTRAIN --recipe $RECIPE model.arch=mlp data.max_samples=1280 "
                        "data.val= train.max_steps=40 train.global_batch=64 strategy=ddp distributed.nproc_per_node=2 "
                        "distributed.hang_timeout_s=0 distributed.timeout_s=3 distributed.stop_grace_s=1 distributed.master_port=" + port() + " output=" +
                            dir.file("run"),
                        dir);
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK_THAT(run.output, Catch::Contains("[rank 0] [cvtrain] error: gradient all-reduce (bucket 1 of 1") &&
                             Catch::Contains("failed on rank 0 of 2 (gloo)") && Catch::Contains("rank 0 exited with code 1"));
}

TEST_CASE("fp16: overflowing steps are skipped with the scale halved and the scale survives a resume", "[e2e]") {
  TempDir dir;
  // The fused optimizers skip on the device (the host learns of it after the update is queued);
  // they must log, count, scale and resume alike.
  const std::string optimizer = GENERATE(std::string(" optim.implementation=foreach"), std::string(" optim.implementation=fused"),
                                         std::string(" optim.implementation=fused optim.name=adamw optim.lr=1e-3"));
  CAPTURE(optimizer);
  // max_bad_steps 1: overflow skips must not count as bad steps.
  const std::string common = " model.arch=mlp precision=fp16 data.max_samples=1280 data.val= train.max_steps=8 train.global_batch=64"
                             " train.log_every=1 train.max_bad_steps=1" + optimizer;
  const Run run = shell("CVTRAIN_INF_GRAD_STEPS=2-3 $CVTRAIN --recipe $RECIPE" + common + " output=" + dir.file("straight") + " || exit 1\n"
                        "CVTRAIN_INF_GRAD_STEPS=2-3 CVTRAIN_STOP_AT_STEP=5 $CVTRAIN --recipe $RECIPE" + common + " output=" +
                            dir.file("resumed") + "\n"
                        "$CVTRAIN --recipe $RECIPE" + common + " output=" + dir.file("resumed") + " || exit 1\n",
                        dir);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.output, Catch::Contains("step 2: fp16 gradients overflowed at loss scale 65536") &&
                             Catch::Contains("step 3: fp16 gradients overflowed at loss scale 32768"));
  const std::string straight = read_text(dir.file("straight/metrics.jsonl"));
  CHECK_THAT(straight, Catch::Contains("\"step\": 8,") && Catch::Contains("\"loss_scale\": 16384") &&
                           Catch::Contains("\"skipped_steps\": 2"));
  CHECK_THAT(read_text(dir.file("resumed/checkpoints/step-00000005/state.txt")), Catch::Contains("loss_scale 16384"));
  CHECK(read_text(dir.file("straight/checkpoints/step-00000008/model.safetensors")) ==
        read_text(dir.file("resumed/checkpoints/step-00000008/model.safetensors")));
}

TEST_CASE("a checkpoint's weights file starts another run through model.pretrained", "[e2e]") {
  TempDir dir;
  const std::string common = " data.max_samples=640 data.val= train.global_batch=64 train.max_steps=2";
  const Run run = shell("$CVTRAIN --recipe $RECIPE" + common + " output=" + dir.file("first") + " || exit 1\n"
                        "$CVTRAIN --recipe $RECIPE" + common + " model.pretrained=" +
                            dir.file("first/checkpoints/step-00000002/model.safetensors") + " output=" + dir.file("second") + "\n"
                        "$CVTRAIN --recipe $RECIPE" + common + " model.pretrained=" + dir.file("none.safetensors") + " output=" +
                            dir.file("third") + "\n"
                        "echo \"missing file exited $?\"\n",
                        dir);
  INFO(run.output);
  CHECK_THAT(run.output, Catch::Contains("weights from " + dir.file("first/checkpoints/step-00000002/model.safetensors")));
  CHECK_THAT(run.output, Catch::Contains("model.pretrained: '" + dir.file("none.safetensors") + "' is not a file") &&
                             Catch::Contains("missing file exited 2"));
}
