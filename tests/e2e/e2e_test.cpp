// End to end: the cvtrain binary trains on a Fashion-MNIST subset, and rejects bad recipes with
// exit code 2 and the key named. Cases are a table of (overrides, expectation).
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <regex>

#include "image_files.h"
#include "run_shell.h"

using cvtrain::testing::read_text;
using cvtrain::testing::TempDir;

namespace {

using RunResult = cvtrain::testing::ShellRun;

RunResult run_cvtrain(const std::string& arguments, const TempDir& dir) {
  return cvtrain::testing::run_shell("$CVTRAIN " + arguments, dir);
}

std::vector<double> numbers_after(const std::string& text, const std::string& key) {
  std::vector<double> values;
  const std::regex pattern("\"" + key + "\": ([-0-9.eE+]+)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern); it != std::sregex_iterator(); ++it)
    values.push_back(std::stod((*it)[1]));
  return values;
}

const std::string kQuickstart = std::string(CVTRAIN_SOURCE_DIR) + "/recipes/quickstart.yaml";

}  // namespace

TEST_CASE("one epoch on 2,000 Fashion-MNIST samples learns", "[e2e]") {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    FAIL("Fashion-MNIST is missing: run scripts/setup.sh (Debian package dataset-fashion-mnist)");
  TempDir dir;
  const RunResult run = run_cvtrain("--recipe " + kQuickstart +
                                        " data.max_samples=2000 data.max_val_samples=2000 train.epochs=1"
                                        " train.global_batch=64 train.log_every=5 output=" + dir.file("run"),
                                    dir);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const std::string metrics = read_text(dir.file("run/metrics.jsonl"));
  const std::vector<double> losses = numbers_after(metrics, "loss");
  REQUIRE(losses.size() == 7);  // 31 steps logged every 5 steps, plus the last
  CHECK(losses.back() < 0.75 * losses.front());
  const std::vector<double> top1 = numbers_after(metrics, "top1");
  REQUIRE(top1.size() == 1);
  CHECK(top1[0] > 0.5);  // chance is 0.1
  CHECK(std::filesystem::file_size(dir.file("run/model.pt")) > 100000);
  CHECK_THAT(read_text(dir.file("run/recipe.yaml")), Catch::Contains("max_samples: 2000"));
}

TEST_CASE("bad recipes exit with code 2 and name the key", "[e2e]") {
  struct Case {
    std::string recipe_text;
    std::string overrides;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {"train: {epochs: 3, global_batch: 64}\ndata: {train: /nope.gz}\n", "", {"data.train", "does not exist", "bad.yaml:3"}},
      {"optim:\n  lerning_rate: 0.1\n", "", {"optim.lerning_rate", "unknown key", "bad.yaml:3"}},
      {"", "train.global_batch=100 train.micro_batch=30", {"train.global_batch", "not divisible"}},
      {"precision: fp64\n", "", {"precision", "'fp64' is not one of"}},
  };
  for (const auto& c : cases) {
    TempDir dir;
    const std::string recipe = dir.write("bad.yaml", "base: " + kQuickstart + "\n" + c.recipe_text);
    const RunResult run = run_cvtrain("check --recipe " + recipe + " " + c.overrides, dir);
    INFO(run.output);
    CHECK(run.exit_code == 2);
    for (const auto& text : c.expected) CHECK_THAT(run.output, Catch::Contains(text));
    CHECK(run_cvtrain("--recipe " + recipe + " " + c.overrides, dir).exit_code == 2);
  }
}

TEST_CASE("check prints the resolved recipe, and unknown flags are usage errors", "[e2e]") {
  TempDir dir;
  const RunResult check = run_cvtrain("check --recipe " + kQuickstart + " train.epochs=2", dir);
  REQUIRE(check.exit_code == 0);
  CHECK_THAT(check.output, Catch::Contains("epochs: 2") && Catch::Contains("accumulation: 1"));
  CHECK(run_cvtrain("--recipe " + kQuickstart + " --no-such-flag", dir).exit_code == 2);
  CHECK(run_cvtrain("", dir).exit_code == 2);
}

TEST_CASE("training variants run to completion with the schedule they ask for", "[e2e]") {
  struct Case {
    std::string name;
    std::string overrides;
  };
  const std::vector<Case> cases = {
      {"bf16 AdamW with accumulation, clipping and a step schedule",
       "precision=bf16 optim.name=adamw optim.lr=0.002 optim.weight_decay=0.05 train.global_batch=64 train.micro_batch=32"
       " schedule.name=step schedule.milestones=[0.5] train.grad_clip=1.0"},
      {"resnet18 with a small stem and pad-crop augmentation",
       "model.arch=resnet18 model.small_stem=true augment.random_crop_padding=2 train.global_batch=64 data.workers=0"},
  };
  for (const auto& c : cases) {
    TempDir dir;
    const RunResult run = run_cvtrain("--recipe " + kQuickstart + " " + c.overrides +
                                          " data.max_samples=640 data.max_val_samples=200 train.epochs=1 train.log_every=1"
                                          " output=" + dir.file("run"),
                                      dir);
    INFO(c.name << "\n" << run.output);
    REQUIRE(run.exit_code == 0);
    const std::string metrics = read_text(dir.file("run/metrics.jsonl"));
    const std::vector<double> losses = numbers_after(metrics, "loss");
    REQUIRE(losses.size() == 10);  // 10 steps of 64 images, each logged
    for (double loss : losses) CHECK(std::isfinite(loss));
    const std::vector<double> val_loss = numbers_after(metrics, "val_loss");
    REQUIRE(val_loss.size() == 1);
    CHECK(std::isfinite(val_loss[0]));
    if (c.overrides.find("schedule.name=step") != std::string::npos) {
      const std::vector<double> lrs = numbers_after(metrics, "lr");
      REQUIRE(lrs.size() == 10);
      CHECK(lrs[4] == Approx(0.002));   // step 5: warmup (half an epoch) done, milestone not reached
      CHECK(lrs[5] == Approx(0.0002));  // step 6 after it
    }
  }
}

TEST_CASE("an ImageFolder of JPEGs trains and evaluates", "[e2e]") {
  TempDir dir;
  for (int i = 0; i < 24; ++i) {
    const auto shade = static_cast<uint8_t>(180 + i);
    cvtrain::testing::write_bytes(dir, "images/red/" + std::to_string(i) + ".jpg", cvtrain::testing::encode_jpeg(48, 40, shade, 30));
    cvtrain::testing::write_bytes(dir, "images/blue/" + std::to_string(i) + ".jpg", cvtrain::testing::encode_jpeg(40, 48, 30, shade));
  }
  const std::string recipe = dir.write("folder.yaml",
                                       "model: {arch: small_cnn, num_classes: 2, image_size: 32}\n"
                                       "data: {format: imagefolder, train: " + dir.file("images") + ", val: " + dir.file("images") + "}\n"
                                       "augment: {hflip: true, random_resized_crop: [0.5, 1.0]}\n"
                                       "train: {epochs: 3, global_batch: 8, log_every: 2}\n"
                                       "optim: {name: adamw, lr: 0.003}\n");
  const RunResult run = run_cvtrain("--recipe " + recipe + " output=" + dir.file("run"), dir);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.output, Catch::Contains("48 samples, 2 classes"));
  const std::vector<double> top1 = numbers_after(read_text(dir.file("run/metrics.jsonl")), "top1");
  REQUIRE(top1.size() == 3);
  CHECK(top1.back() > 0.9);  // red against blue is easy
}
