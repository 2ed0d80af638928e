// End to end: the published recipes' augmentations (RandAugment, random erasing, Mixup/CutMix)
// train, a bad policy is a recipe error, and `data preview` draws what the step receives.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "image_files.h"
#include "run_shell.h"

using cvtrain::testing::numbers_after;
using cvtrain::testing::read_text;
using cvtrain::testing::run_shell;
using cvtrain::testing::TempDir;
using cvtrain::testing::write_red_blue_folder;

namespace {

std::string augment_recipe(const TempDir& dir) {
  return dir.write("augment.yaml", "model: {arch: small_cnn, num_classes: 2, image_size: 32}\n"
                                   "data: {format: imagefolder, train: " + dir.file("images") + ", workers: 2}\n"
                                   "augment:\n"
                                   "  hflip: true\n"
                                   "  random_resized_crop: [0.5, 1.0]\n"
                                   "  auto_augment: rand-m9-mstd0.5-inc1\n"
                                   "  random_erasing: {prob: 0.5, mode: pixel, count: 2}\n"
                                   "train: {epochs: 2, global_batch: 8, log_every: 2}\n"
                                   "optim: {name: adamw, lr: 0.003}\n");
}

// The width and height in a PNG's IHDR chunk.
std::pair<uint32_t, uint32_t> png_size(const std::string& bytes) {
  REQUIRE(bytes.size() > 24);
  REQUIRE(bytes.compare(1, 3, "PNG") == 0);
  const auto u32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(bytes[at + i]);
    return v;
  };
  return {u32(16), u32(20)};
}

}  // namespace

TEST_CASE("RandAugment and random erasing train, and a bad policy is a recipe error naming its section", "[e2e]") {
  TempDir dir;
  write_red_blue_folder(dir, "images", 16);
  const std::string recipe = augment_recipe(dir);
  const auto run = run_shell("$CVTRAIN --recipe " + recipe + " output=" + dir.file("run"), dir);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const std::vector<double> loss = numbers_after(read_text(dir.file("run/metrics.jsonl")), "train_loss");
  REQUIRE(loss.size() == 2);
  CHECK(std::isfinite(loss.back()));
  CHECK_THAT(read_text(dir.file("run/recipe.yaml")), Catch::Contains("auto_augment: rand-m9-mstd0.5-inc1"));
  // Both reach the step: the same initial weights (seed) see other pixels in the first batch, so
  // its loss moves when either one is turned off (and is the same again when nothing changes).
  const auto first_loss = [&](const std::string& name, const std::string& overrides) {
    const auto other = run_shell("$CVTRAIN --recipe " + recipe + " train.max_steps=1 train.log_every=1 " + overrides + " output=" + dir.file(name), dir);
    INFO(other.output);
    REQUIRE(other.exit_code == 0);
    return numbers_after(read_text(dir.file(name + "/metrics.jsonl")), "loss").at(0);
  };
  const double both = first_loss("both", ""), again = first_loss("again", "");
  CHECK(both == again);
  CHECK(first_loss("no_policy", "augment.auto_augment=") != both);
  CHECK(first_loss("no_erasing", "augment.random_erasing.prob=0") != both);
  const auto bad = run_shell("$CVTRAIN --recipe " + recipe + " augment.auto_augment=rand-m9-x2 output=" + dir.file("bad"), dir);
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.output, Catch::Contains("augment.auto_augment") && Catch::Contains("unknown section 'x2'"));
  const auto no_layers = run_shell("$CVTRAIN --recipe " + recipe + " optim.layer_decay=0.65 output=" + dir.file("layers"), dir);
  CHECK(no_layers.exit_code == 2);
  CHECK_THAT(no_layers.output, Catch::Contains("optim.layer_decay") && Catch::Contains("small_cnn has no layer grouping"));
}

TEST_CASE("data preview writes the samples the step receives: the same for the same epoch, changed by the policy", "[e2e]") {
  TempDir dir;
  write_red_blue_folder(dir, "images", 16);
  const std::string recipe = augment_recipe(dir);
  const auto preview = [&](const std::string& out, const std::string& extra) {
    const auto run = run_shell("$CVTRAIN data preview --recipe " + recipe + " --count 8 --out " + dir.file(out) + " " + extra, dir);
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    return read_text(dir.file(out));
  };
  const std::string first = preview("a.png", "");
  // 8 samples: 3 x 3 tiles of 32 px enlarged to 96, a 16 px label band, 4 px gaps.
  CHECK(png_size(first) == std::make_pair(3u * (96 + 4) + 4, 3u * (96 + 16 + 4) + 4));
  CHECK(preview("again.png", "") == first);
  CHECK(preview("plain.png", "augment.auto_augment= augment.random_erasing.prob=0") != first);
  CHECK(preview("epoch1.png", "--epoch 1") != first);
  const auto synthetic = run_shell("$CVTRAIN data preview --recipe " + recipe + " data.format=synthetic data.train= --out x.png", dir);
  CHECK(synthetic.exit_code != 0);
  CHECK_THAT(synthetic.output, Catch::Contains("synthetic data"));
}

TEST_CASE("train.ema: evaluated beside the raw weights, resumed exactly, exported with --ema, and by cvtrain eval", "[e2e]") {
  TempDir dir;
  const std::string common = "$CVTRAIN --recipe " + std::string(CVTRAIN_SOURCE_DIR) +
                             "/recipes/quickstart.yaml data.max_samples=640 data.max_val_samples=500 train.global_batch=64"
                             " train.epochs=2 train.ema.decay=0.9 train.ema.warmup=true";
  const auto run = run_shell(common + " output=" + dir.file("straight") + " || exit 1\n" +
                                 "CVTRAIN_STOP_AT_STEP=13 " + common + " output=" + dir.file("resumed") + "\n" + common +
                                 " output=" + dir.file("resumed") + " || exit 1\n" +
                                 "$CVTRAIN export " + dir.file("straight") + " --ema --out " + dir.file("ema.safetensors") + " || exit 1\n" +
                                 "$CVTRAIN export " + dir.file("straight") + " --out " + dir.file("raw.safetensors") + " || exit 1\n",
                             dir);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const std::string metrics = read_text(dir.file("straight/metrics.jsonl"));
  const std::vector<double> top1 = numbers_after(metrics, "top1"), top1_ema = numbers_after(metrics, "top1_ema");
  REQUIRE(top1_ema.size() == 2);
  CHECK(top1_ema.back() > 0.3);  // the average of a model that learns, not of noise
  CHECK(top1_ema.back() != top1.back());
  CHECK_THAT(run.output, Catch::Contains("(weight average: val loss") && Catch::Contains("'s weight average (step 20)"));
  const std::string last = "/checkpoints/step-00000020/ema.safetensors";
  CHECK(read_text(dir.file("straight") + last) == read_text(dir.file("resumed") + last));  // resumed bit for bit
  CHECK(read_text(dir.file("ema.safetensors")) != read_text(dir.file("raw.safetensors")));

  // `cvtrain eval` of the same weights finds what the run's last evaluation found, on the raw
  // weights (from the checkpoint or the exported file) and on the average.
  const std::string eval = "$CVTRAIN eval --recipe " + std::string(CVTRAIN_SOURCE_DIR) +
                           "/recipes/quickstart.yaml data.max_val_samples=500 output=" + dir.file("eval");
  const auto evaluated = run_shell(eval + " --checkpoint " + dir.file("straight") + " --out " + dir.file("raw.json") + " || exit 1\n" +
                                       eval + " --checkpoint " + dir.file("straight") + " --ema --out " + dir.file("ema.json") + " || exit 1\n" +
                                       eval + " --weights " + dir.file("raw.safetensors") + " || exit 1\n",
                                   dir);
  INFO(evaluated.output);
  REQUIRE(evaluated.exit_code == 0);
  // The same hits over the same samples; eval.json prints 10 significant digits, metrics.jsonl 9:
  // the two decimals of one fraction in [0, 1] differ by at most 5.5e-10.
  CHECK(numbers_after(read_text(dir.file("raw.json")), "top1").at(0) == Approx(top1.back()).margin(1e-9));
  CHECK(numbers_after(read_text(dir.file("ema.json")), "top1").at(0) == Approx(top1_ema.back()).margin(1e-9));
  CHECK(numbers_after(read_text(dir.file("eval/eval.json")), "top1").at(0) == Approx(top1.back()).margin(1e-9));
  CHECK(numbers_after(read_text(dir.file("ema.json")), "checkpoint_step").at(0) == 20);
  CHECK_THAT(evaluated.output, Catch::Contains("on 500 samples of") && Catch::Contains("\nlowest top-1: ") &&
                                   Catch::Contains("\nmost confused: ") && Catch::Contains(" taken for "));
  // Fashion-MNIST's 28 px images are the model's 28 px: the centre view keeps them whole, and says so.
  CHECK_THAT(evaluated.output, Catch::Contains(", 28 px images kept whole, 1 rank(s), ") && !Catch::Contains(" px resize"));
  // Per class: ten classes whose samples add up to the set and whose hits add up to its top-1.
  const std::string raw = read_text(dir.file("raw.json"));
  const std::vector<double> top1s = numbers_after(raw, "top1"), samples = numbers_after(raw, "samples");
  REQUIRE(top1s.size() == 11);
  REQUIRE(samples.size() == 11);
  double counted = 0, hits = 0;
  for (size_t c = 1; c < 11; ++c) {
    counted += samples[c];
    hits += top1s[c] * samples[c];
  }
  CHECK(counted == 500);
  CHECK(hits / 500 == Approx(top1s[0]).margin(1e-9));  // each class's fraction printed to 10 digits: at most 5e-11 off
  CHECK_THAT(raw, Catch::Contains("{\"class\": \"T-shirt/top\", \"samples\": ") && Catch::Contains("\"Ankle boot\""));  // data.class_names
  const std::vector<double> confused = numbers_after(raw, "count");
  REQUIRE_FALSE(confused.empty());
  double misses = 0;
  for (double n : confused) misses += n;
  CHECK(misses <= 500 - hits + 1e-6);  // the confusions listed are some of the misses
  CHECK(std::is_sorted(confused.rbegin(), confused.rend()));
  // The run wrote its own last evaluation by class, the same as cvtrain eval's of the final checkpoint
  // (and the resumed run's the same again).
  const auto by_class = [](const std::string& json) { return json.substr(json.find("\"per_class\"")); };
  const std::string trained = read_text(dir.file("straight/eval.json"));
  CHECK_THAT(trained, Catch::Contains("\"by\": \"training\"") && Catch::Contains("\"checkpoint_step\": 20,"));
  CHECK_THAT(raw, Catch::Contains("\"by\": \"cvtrain eval\"") && Catch::Contains("\"kept_whole\": true,"));
  CHECK(by_class(trained) == by_class(raw));
  CHECK(by_class(read_text(dir.file("resumed/eval.json"))) == by_class(raw));
  CHECK_THAT(run.output, Catch::Contains("last evaluation (by class in " + dir.file("straight/eval.json") + "): top-1 ") &&
                             Catch::Contains("\nlowest top-1: "));
  const auto wrong_head = run_shell(eval + " model.num_classes=12 --weights " + dir.file("raw.safetensors"), dir);
  CHECK(wrong_head.exit_code == 1);
  // small_cnn's head is its last Linear, named as torchvision's fc would be.
  CHECK_THAT(wrong_head.output, Catch::Contains("raw.safetensors: its classifier head (layers.16.weight, layers.16.bias) does not have "
                                                "model.num_classes 12 outputs"));
  const auto no_val = run_shell(eval + " data.val= --checkpoint " + dir.file("straight"), dir);
  CHECK(no_val.exit_code == 2);
  CHECK_THAT(no_val.output, Catch::Contains("data.val: evaluation needs a validation set"));

  const auto none = run_shell("$CVTRAIN --recipe " + std::string(CVTRAIN_SOURCE_DIR) +
                                  "/recipes/quickstart.yaml data.max_samples=128 data.val= train.global_batch=64 train.max_steps=2 output=" +
                                  dir.file("plain") + " && $CVTRAIN export " + dir.file("plain") + " --ema --out " + dir.file("x.safetensors"),
                              dir);
  CHECK(none.exit_code == 1);
  CHECK_THAT(none.output, Catch::Contains("holds no weight average"));
}
