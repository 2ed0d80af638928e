// End to end: the published recipes' augmentations (RandAugment, random erasing, Mixup/CutMix)
// train, a bad policy is a recipe error, and `data preview` draws what the step receives.
#include <catch2/catch.hpp>

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

TEST_CASE("RandAugment and random erasing train; a bad policy is a recipe error naming its section", "[e2e]") {
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
  const auto bad = run_shell("$CVTRAIN --recipe " + recipe + " augment.auto_augment=rand-m9-x2 output=" + dir.file("bad"), dir);
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.output, Catch::Contains("augment.auto_augment") && Catch::Contains("unknown section 'x2'"));
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
