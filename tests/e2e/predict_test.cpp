// `cvtrain predict` end to end: a trained checkpoint, with no recipe but its own, labels image files
// as the run's own evaluation scored the same images; a colour file meets a gray model; bad
// input is named. (Parity with torchvision's classes and probabilities: tests/parity/check_predict.py.)
#include "torch_catch.h"

#include <fmt/format.h>

#include <filesystem>
#include <regex>
#include <sstream>
#include <vector>

#include "cvtrain/core/png_file.h"
#include "cvtrain/data/idx_dataset.h"
#include "run_shell.h"

using cvtrain::testing::numbers_after;
using cvtrain::testing::read_text;
using cvtrain::testing::shell;
using cvtrain::testing::TempDir;

namespace {

constexpr int kImages = 300;
const std::string kTestImages = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";

// The fields of `line`, an empty one after a separator that ends it (a CSV row's empty last column).
std::vector<std::string> split(const std::string& line, char separator) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  for (std::string field; std::getline(in, field, separator);) fields.push_back(field);
  if (!line.empty() && line.back() == separator) fields.emplace_back();
  return fields;
}

}  // namespace

TEST_CASE("cvtrain predict: a checkpoint labels image files as its run's evaluation scored them, by the recipe's class names", "[e2e]") {
  TempDir dir;
  // The first 300 test images as PNG files (their names sort in the set's order), and their labels.
  const cvtrain::IdxDataset test_set(kTestImages, kImages);
  std::vector<int64_t> labels;
  std::filesystem::create_directories(dir.file("images"));
  for (size_t i = 0; i < test_set.size(); ++i) {
    const cvtrain::Image image = test_set.load(i);
    cvtrain::write_png(dir.file(fmt::format("images/{:03d}.png", i)), image.pixels.data(), image.width, image.height, 1);
    labels.push_back(test_set.label(i));
  }
  const auto run = shell("$CVTRAIN --recipe $RECIPE data.max_samples=640 data.max_val_samples=" + std::to_string(kImages) +
                             " train.global_batch=64 train.epochs=1 output=" + dir.file("run") + " > " + dir.file("train.log") +
                             " 2>&1 || exit 9\n"
                             "$CVTRAIN predict --checkpoint " +
                             dir.file("run") + " " + dir.file("images") + " --top-k 3 --batch 50",
                         dir);
  INFO(run.output << read_text(dir.file("train.log")));
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.output, Catch::Contains("000.png: ") && Catch::Contains("... 280 more in " + dir.file("run/predictions.csv")) &&
                             Catch::Contains("class names from " + dir.file("run/checkpoints/")) && Catch::Contains("/classes.txt"));

  std::string csv = read_text(dir.file("run/predictions.csv"));
  REQUIRE_THAT(csv, Catch::EndsWith("\n"));
  csv.pop_back();
  const std::vector<std::string> lines = split(csv, '\n');
  REQUIRE(lines.size() == kImages + 1);
  CHECK(lines[0] == "path,class_1,label_1,probability_1,class_2,label_2,probability_2,class_3,label_3,probability_3,error");
  const std::vector<std::string> names{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                       "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  int hits = 0;
  for (int i = 0; i < kImages; ++i) {
    const std::vector<std::string> row = split(lines[static_cast<size_t>(i) + 1], ',');
    INFO(lines[static_cast<size_t>(i) + 1]);
    REQUIRE(row.size() == 11);
    CHECK(row[0] == dir.file(fmt::format("images/{:03d}.png", i)));
    const int top = std::stoi(row[2]);
    CHECK(row[1] == names.at(static_cast<size_t>(top)));
    const double p1 = std::stod(row[3]), p2 = std::stod(row[6]), p3 = std::stod(row[9]);
    CHECK((p1 >= p2 && p2 >= p3 && p3 > 0 && p1 + p2 + p3 <= 1 + 1e-6));
    CHECK(row[10].empty());
    hits += top == labels[static_cast<size_t>(i)] ? 1 : 0;
  }
  // The same weights, images and view (28 px images kept whole) as the run's last evaluation of its
  // first 300 validation images: the same hits.
  const std::vector<double> top1 = numbers_after(read_text(dir.file("run/eval.json")), "top1");
  REQUIRE_FALSE(top1.empty());
  CHECK(hits == static_cast<int>(std::lround(top1[0] * kImages)));
  CHECK(hits > kImages / 2);  // a model that learned

  // A colour image for the gray model is made gray as Pillow's convert("L"); a missing input stops
  // before any work; weights without a recipe are refused, saying what it would need (a checkpoint's
  // file: its folder as --checkpoint), and a run given as the first input is told to be --checkpoint.
  std::vector<uint8_t> colour(40 * 30 * 3);
  for (size_t i = 0; i < colour.size(); ++i) colour[i] = static_cast<uint8_t>(i * 37 % 256);
  cvtrain::write_png(dir.file("colour.png"), colour.data(), 40, 30, 3);
  const auto more =
      shell("$CVTRAIN predict --checkpoint " + dir.file("run") + " " + dir.file("colour.png") + " --out " + dir.file("colour.jsonl") +
                "; echo \"colour: $?\"\n"
                "$CVTRAIN predict --checkpoint " +
                dir.file("run") + " " + dir.file("colour.png") + " " + dir.file("missing.png") +
                "; echo \"missing: $?\"\n"
                "cp " +
                dir.file("run/checkpoints/step-00000010/model.safetensors") + " " + dir.file("plain.safetensors") +
                "\n"
                "$CVTRAIN predict --weights " +
                dir.file("plain.safetensors") + " " + dir.file("colour.png") +
                "; echo \"no recipe: $?\"\n"
                "$CVTRAIN predict --weights " +
                dir.file("run/checkpoints/step-00000010/model.safetensors") + " " + dir.file("colour.png") +
                "; echo \"in a checkpoint: $?\"\n"
                "$CVTRAIN predict " +
                dir.file("run") + " " + dir.file("colour.png") + "; echo \"run as input: $?\"",
            dir);
  INFO(more.output);
  CHECK_THAT(more.output, Catch::Contains("colour: 0") && Catch::Contains("missing: 1") && Catch::Contains("no recipe: 2"));
  CHECK_THAT(read_text(dir.file("colour.jsonl")),
             Catch::StartsWith("{\"path\": \"" + dir.file("colour.png") + "\", \"top\": [{\"class\": "));
  CHECK_THAT(more.output, Catch::Contains(dir.file("missing.png") + ": no such file or folder") &&
                              Catch::Contains("--weights " + dir.file("plain.safetensors") + ": give --recipe too") &&
                              Catch::Contains("in a checkpoint: 2") &&
                              Catch::Contains("the file lies in a checkpoint, which brings its recipe: write --checkpoint " +
                                              dir.file("run/checkpoints/step-00000010")));
  CHECK_THAT(more.output,
             Catch::Contains("run as input: 2") &&
                 Catch::Contains(dir.file("run") + " is a run or checkpoint, not images: write --checkpoint " + dir.file("run")));
}

TEST_CASE("checkpoints and exported files keep the training classes' names, which cvtrain predict labels with when the data is gone", "[e2e]") {
  TempDir dir;
  // Two ImageFolder classes of Fashion-MNIST images: sandals (label 5) and bags (label 8).
  const cvtrain::IdxDataset test_set(kTestImages, 1000);
  for (size_t i = 0; i < test_set.size(); ++i) {
    const int64_t label = test_set.label(i);
    if (label != 5 && label != 8) continue;
    const std::string folder = dir.file(label == 5 ? "data/sandals" : "data/bags");
    std::filesystem::create_directories(folder);
    const cvtrain::Image image = test_set.load(i);
    cvtrain::write_png(fmt::format("{}/{:03d}.png", folder, i), image.pixels.data(), image.width, image.height, 1);
  }
  const auto run = shell("$CVTRAIN --recipe $RECIPE data.format=imagefolder data.train=" + dir.file("data") +
                             " data.val= data.class_names=[] data.mean=[0.3,0.3,0.3] data.std=[0.35,0.35,0.35] model.num_classes=2"
                             " train.global_batch=16 train.epochs=3 optim.lr=0.02 output=" +
                             dir.file("run") + " > " + dir.file("train.log") +
                             " 2>&1 || exit 9\n"
                             "mv " +
                             dir.file("data") + " " + dir.file("elsewhere") +
                             "\n"
                             "$CVTRAIN predict --checkpoint " +
                             dir.file("run") + " " + dir.file("elsewhere/bags") + " -k 1 --out " + dir.file("bags.csv"),
                         dir);
  INFO(run.output << read_text(dir.file("train.log")));
  REQUIRE(run.exit_code == 0);
  std::smatch named;
  REQUIRE(std::regex_search(run.output, named, std::regex("class names from (\\S+/checkpoints/step-[0-9]+/classes.txt);")));
  CHECK(read_text(named[1]) == "bags\nsandals\n");  // the folders' order: label order
  const std::string csv = read_text(dir.file("bags.csv"));
  CHECK(cvtrain::testing::occurrences(csv, ",bags,0,") + cvtrain::testing::occurrences(csv, ",sandals,1,") ==
        cvtrain::testing::occurrences(csv, "\n") - 1);                                                        // every row names its class
  CHECK(cvtrain::testing::occurrences(csv, ",bags,0,") > cvtrain::testing::occurrences(csv, ",sandals,1,"));  // and bags are mostly bags

  // An exported file carries the recipe and the names: with the run folder gone too, --weights alone
  // labels the same files with the same classes and probabilities.
  const auto exported = shell("$CVTRAIN export " + dir.file("run") + " --out " + dir.file("bags.safetensors") + " || exit 9\n" + "rm -r " +
                                  dir.file("run") + "\n" + "$CVTRAIN predict --weights " + dir.file("bags.safetensors") + " " +
                                  dir.file("elsewhere/bags") + " -k 1 --out " + dir.file("exported.csv"),
                              dir);
  INFO(exported.output);
  REQUIRE(exported.exit_code == 0);
  CHECK_THAT(exported.output, Catch::Contains("its recipe and 2 class names travel in the file") &&
                                  Catch::Contains("class names from " + dir.file("bags.safetensors") + ";"));
  CHECK(read_text(dir.file("exported.csv")) == csv);
}
