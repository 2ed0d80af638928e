// End to end for segmentation pairs: the shapes set scripts/make_shapes_dataset.py writes, read in
// its two layouts by `data inspect`, and damaged masks named.
#include <catch2/catch.hpp>

#include <filesystem>

#include "image_files.h"
#include "run_shell.h"

using cvtrain::testing::TempDir;

namespace {

cvtrain::testing::ShellRun run_cvtrain(const std::string& arguments, const TempDir& dir) {
  return cvtrain::testing::run_shell("$CVTRAIN " + arguments, dir);
}

// A small shapes set under DIR/shapes (scripts/make_shapes_dataset.py, the venv's numpy and Pillow).
std::string make_shapes(const TempDir& dir, int train, int val, int size) {
  const auto made = cvtrain::testing::run_shell(
      std::string(CVTRAIN_VENV_PYTHON) + " " + CVTRAIN_SOURCE_DIR + "/scripts/make_shapes_dataset.py " + dir.file("shapes") + " --train " +
          std::to_string(train) + " --val " + std::to_string(val) + " --size " + std::to_string(size),
      dir);
  INFO(made.output);
  REQUIRE(made.exit_code == 0);
  return dir.file("shapes");
}

}  // namespace

TEST_CASE("data inspect reads segmentation pairs in the VOC layout and as a list, and names damaged masks", "[e2e][venv]") {
  TempDir dir;
  const std::string shapes = make_shapes(dir, 24, 8, 48);
  const auto voc = run_cvtrain("data inspect " + shapes + "/ImageSets/Segmentation/train.txt --num-classes 4", dir);
  INFO(voc.output);
  CHECK(voc.exit_code == 0);
  CHECK_THAT(voc.output, Catch::Contains("(voc layout): 24 image and mask pairs; 24 read (every pair)") &&
                             Catch::Contains("4 classes, 55296 of the pixels labelled") && Catch::Contains("every pair read is usable"));
  const auto list = run_cvtrain("data inspect " + shapes + "/val.csv --json", dir);
  CHECK(list.exit_code == 0);
  CHECK_THAT(list.output,
             Catch::Contains("\"layout\": \"list\"") && Catch::Contains("\"pairs\": 8") && Catch::Contains("\"num_classes\": 4"));

  // Damage: one mask claims class 9, one is narrower than its image; then one goes missing.
  cvtrain::testing::write_bytes(dir, "shapes/SegmentationClass/train_00005.png",
                                cvtrain::testing::encode_png(std::vector<uint8_t>(48 * 48, 9), 48, 48, 0, 8));
  cvtrain::testing::write_bytes(dir, "small.png", cvtrain::testing::encode_png(std::vector<uint8_t>(40 * 48, 1), 40, 48, 0, 8));
  std::filesystem::copy_file(dir.file("small.png"), shapes + "/SegmentationClass/train_00007.png",
                             std::filesystem::copy_options::overwrite_existing);
  const auto damaged = run_cvtrain("data inspect " + shapes + "/ImageSets/Segmentation/train.txt --num-classes 4", dir);
  INFO(damaged.output);
  CHECK(damaged.exit_code == 1);
  CHECK_THAT(damaged.output, Catch::Contains("1 mask(s) of another size than their image") &&
                                 Catch::Contains("train_00007.png: 40x48, its image") &&
                                 Catch::Contains("1 mask(s) with ids that are no class (0 to 3, or 255)") &&
                                 Catch::Contains("train_00005.png: id 9 (2304 pixels)"));
  std::filesystem::remove(shapes + "/SegmentationClass/train_00011.png");
  const auto missing = run_cvtrain("data inspect " + shapes + "/ImageSets/Segmentation/train.txt", dir);
  CHECK(missing.exit_code == 1);
  CHECK_THAT(missing.output, Catch::Contains("1 of 24 pairs lack a file, the first mask") && Catch::Contains("train_00011.png"));
}
