// Recipe loading: defaults, inheritance, overrides, and errors that name file:line and key.
#include <catch2/catch.hpp>

#include <cstdlib>

#include <filesystem>

#include "cvtrain/core/error.h"
#include "cvtrain/models/arch_traits.h"
#include "cvtrain/recipe/recipe_checks.h"
#include "cvtrain/recipe/recipe_loader.h"
#include "cvtrain/recipe/recipe_schema.h"
#include "cvtrain/recipe/run_plan.h"
#include "temp_dir.h"

using namespace cvtrain;
using cvtrain::testing::TempDir;

namespace {

LoadOptions no_path_checks(std::vector<std::string> overrides = {}) {
  LoadOptions options;
  options.overrides = std::move(overrides);
  options.check_paths = false;
  return options;
}

// The RecipeError's problems for a recipe expected to be wrong.
std::vector<std::string> problems_of(const std::string& path, const LoadOptions& options) {
  try {
    load_recipe(path, options);
  } catch (const RecipeError& e) {
    return e.problems();
  }
  FAIL("expected a RecipeError for " << path);
  return {};
}

constexpr const char* kMinimal = "data: {train: /data/train.gz}\ntrain: {global_batch: 64}\n";

}  // namespace

TEST_CASE("a minimal recipe gets every default", "[recipe]") {
  TempDir dir;
  const Recipe r = load_recipe(dir.write("r.yaml", kMinimal), no_path_checks());
  CHECK(r.model.arch == "small_cnn");
  CHECK(r.data.train == "/data/train.gz");
  CHECK(r.train.global_batch == 64);
  CHECK(r.train.micro_batch == 64);
  CHECK(r.train.accumulation == 1);
  CHECK(r.optim.name == OptimizerKind::kSgd);
  CHECK(r.precision == Precision::kFp32);
  CHECK_FALSE(r.train.cudnn_benchmark);
  CHECK(r.optim.betas == std::vector<double>{0.9, 0.999});
}

TEST_CASE("base: inherits relative to the recipe, later keys win, siblings survive", "[recipe]") {
  TempDir dir;
  dir.write("bases/defaults.yaml",
            "data: {train: /d/train.gz, workers: 7}\n"
            "optim: {name: adamw, lr: 0.003, betas: [0.9, 0.95]}\n"
            "train: {global_batch: 256, epochs: 90}\n");
  dir.write("bases/mid.yaml", "base: defaults.yaml\noptim: {lr: 0.001}\n");
  const std::string path = dir.write("child.yaml", "base: bases/mid.yaml\ntrain:\n  epochs: 5\n");
  const Recipe r = load_recipe(path, no_path_checks());
  CHECK(r.optim.name == OptimizerKind::kAdamw);
  CHECK(r.optim.lr == Approx(0.001));
  CHECK(r.optim.betas == std::vector<double>{0.9, 0.95});
  CHECK(r.data.workers.count == 7);
  CHECK_FALSE(r.data.workers.automatic);
  CHECK(r.train.epochs == 5);
  CHECK(r.train.global_batch == 256);
}

TEST_CASE("overrides set numbers, booleans, strings and lists and win over the file", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", kMinimal);
  const Recipe r = load_recipe(path, no_path_checks({"train.epochs=3", "optim.lr=1e-3", "optim.nesterov=true",
                                                      "optim.betas=[0.8, 0.9]", "model.arch=resnet18", "train.global_batch=32"}));
  CHECK(r.train.epochs == 3);
  CHECK(r.optim.lr == Approx(1e-3));
  CHECK(r.optim.nesterov);
  CHECK(r.optim.betas == std::vector<double>{0.8, 0.9});
  CHECK(r.model.arch == "resnet18");
  CHECK(r.train.global_batch == 32);
}

TEST_CASE("an unknown key names file:line and suggests the right one", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", "data: {train: /d.gz}\ntrain:\n  global_batch: 64\n  epoch: 3\n");
  const auto problems = problems_of(path, no_path_checks());
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Catch::Contains(path + ":4") && Catch::Contains("train.epoch") &&
                              Catch::Contains("did you mean 'train.epochs'?"));
}

TEST_CASE("type and range errors name file:line, key and value", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml",
                                     "data: {train: /d.gz}\n"
                                     "train:\n"
                                     "  global_batch: 64\n"
                                     "  epochs: many\n"
                                     "optim:\n"
                                     "  lr: -0.1\n"
                                     "  name: sgdd\n");
  const auto problems = problems_of(path, no_path_checks());
  REQUIRE(problems.size() == 3);  // every problem at once
  CHECK_THAT(problems[0], Catch::Contains(path + ":6: optim.lr") && Catch::Contains("greater than 0"));
  CHECK_THAT(problems[1], Catch::Contains(path + ":7: optim.name") && Catch::Contains("did you mean 'sgd'?"));
  CHECK_THAT(problems[2], Catch::Contains(path + ":4: train.epochs") && Catch::Contains("expected an integer, got 'many'"));
}

TEST_CASE("a key that failed to read is not blamed again by a rule comparing it, and an empty value says so", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", "data: {train: /d.gz, mean: 0.3, std: [0.3]}\ntrain: {global_batch: 64}\noptim: {lr: }\n");
  const auto problems = problems_of(path, no_path_checks());
  // data.mean keeps its three defaults; "data.std has 1 values but data.mean has 3" would blame the wrong line.
  REQUIRE(problems.size() == 2);
  CHECK_THAT(problems[0], Catch::Contains("data.mean") && Catch::Contains("expected a list of numbers"));
  CHECK_THAT(problems[1], Catch::Contains("optim.lr") && Catch::Contains("expected a number, got nothing"));
}

TEST_CASE("YAML's .inf and .nan are refused where a number is expected", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", kMinimal);
  const auto problems = problems_of(path, no_path_checks({"optim.lr=.inf", "augment.mixup=.nan", "data.std=[0.3, -.Inf, 0.2]"}));
  REQUIRE(problems.size() == 3);  // in key order
  CHECK_THAT(problems[0], Catch::Contains("augment.mixup: expected a finite number, got '.nan'"));
  CHECK_THAT(problems[1], Catch::Contains("data.std: in the list: expected a finite number, got '-.Inf'"));
  CHECK_THAT(problems[2], Catch::Contains("optim.lr: expected a finite number, got '.inf'"));
}

TEST_CASE("YAML merge keys merge one leaf at a time, and top-level x- keys may hold their anchors", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml",
                                     "x-sgd: &sgd {name: sgd, lr: 0.2, momentum: 0.8}\n"
                                     "x-decay: &decay {weight_decay: 0.05, lr: 0.3}\n"
                                     "data: {train: /d.gz}\n"
                                     "train: {global_batch: 64}\n"
                                     "optim:\n"
                                     "  <<: [*sgd, *decay]\n"  // the first map wins a key both set
                                     "  momentum: 0.9\n");     // the map's own key wins over both
  const Recipe r = load_recipe(path, no_path_checks());
  CHECK(r.optim.name == OptimizerKind::kSgd);
  CHECK(r.optim.lr == 0.2);
  CHECK(r.optim.momentum == 0.9);
  CHECK(r.optim.weight_decay == 0.05);
  CHECK(r.origins.at("optim.lr") == path + ":1");  // a merged key points at its anchor's line

  const std::string bad = dir.write("bad.yaml", std::string(kMinimal) + "x-o: &o {lr: 0.2, nesterv: true}\noptim: {<<: *o}\n");
  const auto problems = problems_of(bad, no_path_checks());
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Catch::Contains(bad + ":3: optim.nesterv") && Catch::Contains("did you mean 'optim.nesterov'?"));
}

TEST_CASE("a warmup as long as the run, a milestone past it and validation on the training data are warnings, not errors", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", std::string(kMinimal) + "schedule: {name: step, milestones: [2, 30], warmup_epochs: 5}\n");
  const Recipe long_run = load_recipe(path, no_path_checks({"train.epochs=90"}));
  CHECK(recipe_warnings(long_run).empty());
  const Recipe smoke = load_recipe(path, no_path_checks({"train.epochs=3"}));  // loads: a short run of a long recipe is legitimate
  const auto warnings = recipe_warnings(smoke);
  REQUIRE(warnings.size() == 2);
  CHECK_THAT(warnings[0], Catch::Contains(path + ":3: schedule.warmup_epochs: 5 is not shorter than train.epochs 3"));
  CHECK_THAT(warnings[1], Catch::Contains("schedule.milestones: epoch 30 is not within train.epochs 3") && Catch::Contains("never applies"));
  // Validation on the training data, by the same path or another spelling of it.
  dir.write("images/a/x.jpg", "");
  for (const std::string& val : {dir.file("images"), dir.file("images/./a/..")}) {
    const Recipe same = load_recipe(
        path, no_path_checks({"train.epochs=90", "model.image_size=64", "data.train=" + dir.file("images"), "data.val=" + val}));
    const auto leak = recipe_warnings(same);
    REQUIRE(leak.size() == 1);
    CHECK_THAT(leak[0], Catch::Contains("data.val: " + val + " is data.train too: the validation figures are scored on the training images"));
  }
  CHECK(recipe_warnings(load_recipe(path, no_path_checks({"train.epochs=90", "data.val=/data/val.gz"}))).empty());
}

TEST_CASE("photographs left at the default image size are warned about, Fashion-MNIST is not", "[recipe]") {
  TempDir dir;
  dir.write("images/a/x.jpg", "");
  const std::string path = dir.write("r.yaml", "data: {train: " + dir.file("images") + "}\ntrain: {global_batch: 8}\n");
  const auto warnings = recipe_warnings(load_recipe(path, no_path_checks()));
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::StartsWith(path + " (not set): model.image_size: not set, so images are cut to 28 px") &&
                              Catch::Contains("set model.image_size"));
  CHECK(recipe_warnings(load_recipe(path, no_path_checks({"model.image_size=28"}))).empty());  // set, even to the default
  CHECK(recipe_warnings(load_recipe(dir.write("idx.yaml", kMinimal), no_path_checks())).empty());
}

TEST_CASE("a path that starts with ~/ is in the home folder, as a shell would take it, not a folder named ~", "[recipe]") {
  TempDir dir;
  const std::string home = std::getenv("HOME");
  const std::string path = dir.write("r.yaml", "data: {train: ~/datasets/train.gz, val: ~x/val.gz}\ntrain: {global_batch: 64}\noutput: ~/runs/a\n");
  const Recipe r = load_recipe(path, no_path_checks({"model.pretrained=~/w.safetensors", "checkpoint.resume=~/runs/b"}));
  CHECK(r.data.train == home + "/datasets/train.gz");
  CHECK(r.data.val == "~x/val.gz");  // another user's home: left as written
  CHECK(r.output == home + "/runs/a");
  CHECK(r.model.pretrained == home + "/w.safetensors");
  CHECK(r.checkpoint.resume.folder == home + "/runs/b");
}

TEST_CASE("augmentation policies and random erasing read like timm's flags, and a bad policy names its section", "[recipe]") {
  TempDir dir;
  const std::string good = dir.write("good.yaml", std::string(kMinimal) +
                                                      "augment:\n"
                                                      "  auto_augment: rand-m9-mstd0.5-inc1\n"
                                                      "  random_erasing: {prob: 0.25, mode: pixel}\n");
  const Recipe r = load_recipe(good, no_path_checks());
  CHECK(r.augment.auto_augment.kind == AugmentPolicy::Kind::kRand);
  CHECK(r.augment.auto_augment.magnitude_std == 0.5);
  CHECK(r.augment.random_erasing.prob == 0.25);
  CHECK(r.augment.random_erasing.mode == EraseMode::kPixel);
  CHECK_THAT(recipe_to_yaml(r), Catch::Contains("auto_augment: rand-m9-mstd0.5-inc1"));
  const std::string bad = dir.write("bad.yaml", std::string(kMinimal) +
                                                    "augment:\n"
                                                    "  auto_augment: rand-m9-q3\n"
                                                    "  random_erasing: {mode: pixels, min_area: 0.5, max_area: 0.4}\n");
  const auto problems = problems_of(bad, no_path_checks());
  REQUIRE(problems.size() == 3);
  CHECK_THAT(problems[0], Catch::Contains(bad + ":4: augment.auto_augment") && Catch::Contains("unknown section 'q3'"));
  CHECK_THAT(problems[1], Catch::Contains("augment.random_erasing.mode") && Catch::Contains("did you mean 'pixel'?"));
  CHECK_THAT(problems[2], Catch::Contains("augment.random_erasing.min_area") && Catch::Contains("above max_area"));
}

TEST_CASE("flips take timm's chance or a boolean, print back as recipes wrote them, and refuse other values", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", kMinimal);
  const auto loaded = [&](const std::vector<std::string>& overrides) { return load_recipe(path, no_path_checks(overrides)); };
  const Recipe timm = loaded({"augment.hflip=0.5", "augment.vflip=0.25"});
  CHECK(timm.augment.hflip.p == 0.5);
  CHECK(timm.augment.vflip.p == 0.25);
  CHECK_THAT(recipe_to_yaml(timm), Catch::Contains("hflip: true\n") && Catch::Contains("vflip: 0.25\n"));
  CHECK(loaded({"augment.hflip=true"}).augment.hflip.p == 0.5);
  CHECK(loaded({"augment.hflip=off"}).augment.hflip.p == 0);
  const Recipe always = loaded({"augment.hflip=1"});  // a number is a chance: always, warned about
  CHECK(always.augment.hflip.p == 1);
  REQUIRE(recipe_warnings(always).size() == 1);
  CHECK_THAT(recipe_warnings(always)[0], Catch::Contains("override 'augment.hflip=1': augment.hflip: 1 is a chance") &&
                                             Catch::Contains("for a random flip write 0.5 (or true)"));
  CHECK(recipe_warnings(timm).empty());
  CHECK(loaded({"augment.hflip=0"}).augment.hflip.p == 0);
  CHECK_THAT(recipe_to_yaml(loaded({"augment.hflip=0"})), Catch::Contains("hflip: false\n") && Catch::Contains("vflip: false\n"));
  for (const char* bad : {"augment.hflip=1.5", "augment.vflip=-0.1", "augment.hflip=sometimes", "augment.hflip=[0.5]"}) {
    const auto problems = problems_of(path, no_path_checks({bad}));
    REQUIRE(problems.size() == 1);
    CHECK_THAT(problems[0], Catch::Contains("expected a chance in [0, 1] (timm's --hflip 0.5), true (0.5) or false, got"));
  }
}

TEST_CASE("the crop's aspect range and both resizes' filters load as timm names them, and say what is wrong", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", kMinimal);
  const auto loaded = [&](const std::vector<std::string>& overrides) { return load_recipe(path, no_path_checks(overrides)); };
  const Recipe defaults = loaded({});
  CHECK(defaults.augment.random_resized_crop_ratio == std::vector<double>{0.75, 4.0 / 3.0});
  CHECK(defaults.augment.interpolation == AugmentInterpolation::kBilinear);  // earlier recipes' samples stay as they were
  CHECK(defaults.data.eval_interpolation == AugmentInterpolation::kBilinear);
  const Recipe deit = loaded({"augment.random_resized_crop=[0.08, 1]", "augment.random_resized_crop_ratio=[0.5, 2]",
                              "augment.interpolation=random", "data.eval_interpolation=bicubic"});
  CHECK(deit.augment.random_resized_crop_ratio == std::vector<double>{0.5, 2.0});
  CHECK(deit.augment.interpolation == AugmentInterpolation::kRandom);
  CHECK(deit.data.eval_interpolation == AugmentInterpolation::kBicubic);
  const std::string printed = recipe_to_yaml(deit);
  CHECK_THAT(printed, Catch::Contains("random_resized_crop_ratio: [0.5, 2]") && Catch::Contains("interpolation: random") &&
                          Catch::Contains("eval_interpolation: bicubic"));
  CHECK(load_recipe(dir.write("printed.yaml", printed), no_path_checks()).augment.random_resized_crop_ratio ==
        std::vector<double>{0.5, 2.0});
  CHECK(recipe_warnings(deit).empty());
  const auto warned = recipe_warnings(loaded({"augment.random_resized_crop_ratio=[0.5, 2]"}));
  REQUIRE(warned.size() == 1);
  CHECK_THAT(warned[0], Catch::Contains("augment.random_resized_crop_ratio") && Catch::Contains("which is off: it changes nothing"));
  const auto problems = problems_of(path, no_path_checks({"data.eval_interpolation=random", "augment.random_resized_crop_ratio=[1.5, 1]",
                                                          "augment.interpolation=cubic"}));
  REQUIRE(problems.size() == 3);
  CHECK_THAT(problems[0],
             Catch::Contains("augment.interpolation: 'cubic' is not one of: random, bilinear, bicubic (did you mean 'bicubic'?)"));
  CHECK_THAT(problems[1], Catch::Contains("data.eval_interpolation: random draws a filter per sample, which evaluation does not"));
  CHECK_THAT(problems[2], Catch::Contains("augment.random_resized_crop_ratio: expected [min, max] aspect ratios"));
  // timm's names for them.
  const auto hinted = problems_of(path, no_path_checks({"augment.train_interpolation=bicubic", "augment.ratio=[0.75, 1.33]"}));
  REQUIRE(hinted.size() == 2);
  CHECK_THAT(hinted[0], Catch::Contains("augment.ratio: unknown key; cvtrain calls it augment.random_resized_crop_ratio"));
  CHECK_THAT(hinted[1], Catch::Contains("augment.train_interpolation: unknown key; cvtrain calls it augment.interpolation"));
}

TEST_CASE("data.class_names reads a list of names and prints it back", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml",
                                     "data:\n  train: /data/train.gz\n  class_names: [T-shirt/top, Ankle boot, \"7\"]\n"
                                     "train: {global_batch: 64}\n");
  const Recipe r = load_recipe(path, no_path_checks());
  CHECK(r.data.class_names == std::vector<std::string>{"T-shirt/top", "Ankle boot", "7"});
  CHECK(load_recipe(dir.write("printed.yaml", recipe_to_yaml(r)), no_path_checks()).data.class_names == r.data.class_names);
  const auto problems = problems_of(path, no_path_checks({"data.class_names=cat"}));
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Catch::Contains("data.class_names: expected a list of names, e.g. [cat, dog], got 'cat'"));
  // null (or nothing) clears the names a base recipe gave, for data that names its classes itself.
  const std::string child = dir.write("child.yaml", "base: r.yaml\ndata: {class_names: null}\n");
  CHECK(load_recipe(child, no_path_checks()).data.class_names.empty());
  CHECK(load_recipe(path, no_path_checks({"data.class_names="})).data.class_names.empty());
}

TEST_CASE("data.root is a folder, and only for image lists", "[recipe]") {
  TempDir dir;
  dir.write("train.csv", "path,label\na.jpg,cat\n");
  const std::string path = dir.write("r.yaml", "data: {format: list, train: " + dir.file("train.csv") + "}\ntrain: {global_batch: 1}\n");
  LoadOptions options;
  options.check_paths = true;
  options.overrides = {"data.root=" + dir.file("")};
  CHECK(load_recipe(path, options).data.root == dir.file(""));
  options.overrides = {"data.root=" + dir.file("nowhere")};
  CHECK_THAT(problems_of(path, options).at(0), Catch::Contains("data.root: '" + dir.file("nowhere") + "' is not a folder"));
  options.overrides = {"data.format=imagefolder", "data.train=" + dir.file(""), "data.root=" + dir.file("")};
  CHECK_THAT(problems_of(path, options).at(0),
             Catch::Contains("data.root: is for data.format list") && Catch::Contains("data.format is imagefolder"));
}

TEST_CASE("data.format auto, the default, is what data.train holds, or its name tells without the data", "[recipe]") {
  TempDir dir;
  dir.write("folder/cat/a.jpg", "");
  dir.write("shards/classes.txt", "cat\n");
  dir.write("train.csv", "path,label\na.jpg,cat\n");
  dir.write("images-idx3-ubyte", std::string("\0\0\x08\x03", 4));
  const std::string path = dir.write("r.yaml", "data: {train: " + dir.file("folder") + "}\ntrain: {global_batch: 1}\n");
  LoadOptions options;
  const auto format_with = [&](const std::string& train) {
    options.overrides = {"data.train=" + train};
    return load_recipe(path, options).data.format;
  };
  CHECK(format_with(dir.file("folder")) == DataFormat::kImageFolder);
  CHECK(format_with(dir.file("shards")) == DataFormat::kShards);
  CHECK(format_with(dir.file("train.csv")) == DataFormat::kList);
  CHECK(format_with(dir.file("images-idx3-ubyte")) == DataFormat::kIdx);
  options.overrides = {"data.format=idx"};  // a format given is kept, and the path held against it
  CHECK_THAT(problems_of(path, options).at(0), Catch::Contains("must be a file for data.format idx"));
  options.overrides = {"data.val=" + dir.file("train.csv")};  // validation in another format than training's
  CHECK_THAT(problems_of(path, options).at(0),
             Catch::Contains("data.val") && Catch::Contains("must be a folder for data.format imagefolder"));
  options.overrides = {"data.train=" + dir.file("nowhere")};
  CHECK_THAT(problems_of(path, options).at(0), Catch::Contains("does not exist") && !Catch::Contains("must be"));
  // A file of no format (a COCO annotation file) says how it begins and what data.train takes; the
  // validation folder beside it is not blamed.
  dir.write("instances.json", "{\"images\": [{\"id\": 1}]}");
  options.overrides = {"data.train=" + dir.file("instances.json"), "data.val=" + dir.file("folder")};
  const auto json = problems_of(path, options);
  REQUIRE(json.size() == 1);
  CHECK_THAT(json[0], Catch::Contains("data.train: '" + dir.file("instances.json") +
                                      "' is no dataset cvtrain reads (it begins with "
                                      "'{\"images\": [{\"id\": 1}]}...')") &&
                          Catch::Contains("a folder of class folders (ImageFolder)"));
  // Without the data: the name's extension tells IDX and lists; a bare folder name stays auto.
  CHECK(load_recipe(path, no_path_checks({"data.train=/data/train-images-idx3-ubyte.gz"})).data.format == DataFormat::kIdx);
  CHECK(load_recipe(path, no_path_checks({"data.train=/data/train.tsv"})).data.format == DataFormat::kList);
  const Recipe unknown = load_recipe(path, no_path_checks({"data.train=/data/imagenet/train", "data.decoder=nvjpeg", "device=cuda"}));
  CHECK(unknown.data.format == DataFormat::kAuto);
  CHECK_THAT(recipe_to_yaml(unknown), Catch::Contains("format: auto"));
}

TEST_CASE("data.workers is auto unless a number is given, and prints as it was given", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", kMinimal);
  const Recipe automatic = load_recipe(path, no_path_checks());
  CHECK(automatic.data.workers.automatic);
  CHECK_THAT(recipe_to_yaml(automatic), Catch::Contains("  workers: auto\n"));
  const Recipe four = load_recipe(path, no_path_checks({"data.workers=4"}));
  CHECK_FALSE(four.data.workers.automatic);
  CHECK(four.data.workers.count == 4);
  CHECK_THAT(recipe_to_yaml(four), Catch::Contains("  workers: 4\n"));
  CHECK(load_recipe(path, no_path_checks({"data.workers=4", "data.workers=auto"})).data.workers.automatic);
  CHECK(load_recipe(path, no_path_checks({"data.workers=0"})).data.workers.count == 0);  // on the training thread
  for (const char* bad : {"data.workers=-1", "data.workers=300", "data.workers=many", "data.workers=[2]"})
    CHECK_THAT(problems_of(path, no_path_checks({bad})).at(0),
               Catch::Contains("data.workers: expected auto") && Catch::Contains("or a number of threads in [0, 256]"));
}

TEST_CASE("a bad override is named as the override", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", kMinimal);
  const auto problems = problems_of(path, no_path_checks({"train.epochs=2.5", "nonsense"}));
  REQUIRE(problems.size() == 2);
  // Malformed overrides are reported while reading them, before values are checked.
  CHECK_THAT(problems[0], Catch::Contains("override 'nonsense'") && Catch::Contains("key.path=value"));
  CHECK_THAT(problems[1], Catch::Contains("override 'train.epochs=2.5'") && Catch::Contains("expected an integer"));
}

TEST_CASE("a key under a key that takes one value says how to set that value", "[recipe]") {
  TempDir dir;
  const auto problems = problems_of(dir.write("r.yaml", kMinimal), no_path_checks({"output.dir=/tmp/run", "preflight.seconds=5"}));
  REQUIRE(problems.size() == 2);
  CHECK_THAT(problems[0], Catch::EndsWith("override 'output.dir=/tmp/run': output.dir: unknown key; output takes one value, not keys "
                                          "under it: output: VALUE in a recipe, output=VALUE as an override"));
  CHECK_THAT(problems[1], Catch::Contains("preflight.seconds: unknown key; preflight takes one value"));
}

TEST_CASE("batch arithmetic: any two of global, micro, accumulation determine the third", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", "data: {train: /d.gz}\n");
  const Recipe a = load_recipe(path, no_path_checks({"train.global_batch=256", "train.micro_batch=64"}));
  CHECK(a.train.accumulation == 4);
  const Recipe b = load_recipe(path, no_path_checks({"train.micro_batch=32", "train.accumulation=3"}));
  CHECK(b.train.global_batch == 96);
  const Recipe c = load_recipe(path, no_path_checks({"train.global_batch=120", "train.accumulation=4"}));
  CHECK(c.train.micro_batch == 30);

  auto inconsistent = problems_of(path, no_path_checks({"train.global_batch=100", "train.micro_batch=32", "train.accumulation=2"}));
  REQUIRE(inconsistent.size() == 1);
  CHECK_THAT(inconsistent[0], Catch::Contains("override 'train.global_batch=100'") &&
                                  Catch::Contains("micro_batch 32 x accumulation 2 x world size 1 = 64"));
  auto indivisible = problems_of(path, no_path_checks({"train.global_batch=100", "train.micro_batch=32"}));
  REQUIRE(indivisible.size() == 1);
  CHECK_THAT(indivisible[0], Catch::Contains("not divisible by micro_batch 32"));
  CHECK_THAT(problems_of(path, no_path_checks())[0], Catch::Contains("train.global_batch"));
}

TEST_CASE("missing data paths, syntax errors and inheritance cycles are recipe errors", "[recipe]") {
  TempDir dir;
  const std::string missing = dir.write("missing.yaml", "data: {train: /no/such/file.gz}\ntrain: {global_batch: 8}\n");
  LoadOptions with_paths;
  auto problems = problems_of(missing, with_paths);
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Catch::Contains(missing + ":1: data.train") && Catch::Contains("does not exist") &&
                              Catch::Contains("with data.train=PATH after the recipe") && !Catch::Contains("relative to"));
  const std::string relative = dir.write("relative.yaml", "data: {train: no/such/file.gz}\ntrain: {global_batch: 8}\n");
  CHECK_THAT(problems_of(relative, with_paths).at(0),
             Catch::Contains("relative to the working directory " + std::filesystem::current_path().string()));
  // Python's None for "no validation set": told how to leave the key out.
  CHECK_THAT(problems_of(missing, LoadOptions{{"data.train=" + missing, "data.format=idx", "data.val=None"}}).back(),
             Catch::Contains("data.val: 'None' does not exist") && Catch::Contains("to leave data.val out, give it no value (data.val= or null)"));
  // timm's pretrained=True: weights to download, which cvtrain does not; told to give a file.
  CHECK_THAT(problems_of(missing, LoadOptions{{"data.train=" + missing, "data.format=idx", "model.pretrained=true"}}).back(),
             Catch::Contains("model.pretrained: 'true' is not a file") && Catch::Contains("cvtrain downloads no weights"));

  const std::string broken = dir.write("broken.yaml", "train:\n  epochs: [1, 2\n");
  CHECK_THAT(problems_of(broken, no_path_checks())[0], Catch::Contains(broken + ":") && Catch::Contains("YAML syntax error"));

  dir.write("a.yaml", "base: b.yaml\n");
  const std::string b = dir.write("b.yaml", "base: a.yaml\n");
  CHECK_THAT(problems_of(b, no_path_checks())[0], Catch::Contains("inherits from itself"));

  const std::string tabbed = dir.write("tabbed.yaml", "model:\n\tarch: resnet18\n");
  CHECK_THAT(problems_of(tabbed, no_path_checks())[0],
             Catch::Contains(tabbed + ":2: YAML syntax error") && Catch::Contains("indented with a tab; YAML indents with spaces"));
  const std::string broken_list = dir.write("list.yaml", "train:\n  epochs: [1, 2\n");
  CHECK_THAT(problems_of(broken_list, no_path_checks())[0], !Catch::Contains("tab"));

  std::filesystem::create_directories(dir.file("folder"));
  const std::string on_folder = dir.write("on_folder.yaml", "base: folder\n");
  CHECK_THAT(problems_of(on_folder, no_path_checks())[0], Catch::Contains(on_folder + ":1: base: '") && Catch::Contains("' is a folder, not a recipe file"));
  CHECK_THAT(problems_of(dir.file("folder"), no_path_checks())[0], Catch::Contains("is a folder; a recipe is a YAML file"));
}

TEST_CASE("a section given a value is explained, and an empty one sets nothing", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", "data: {train: /d.gz}\naugment: 5\n");
  const auto problems = problems_of(path, no_path_checks({"train.global_batch=8"}));
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Catch::Contains(path + ":2: augment") && Catch::Contains("is a section") && Catch::Contains("hflip") &&
                              !Catch::Contains("to choose one"));
  // A section that one key chooses (the model, optimizer, schedule), named the way some configs do.
  const auto named = problems_of(dir.write("named.yaml", "data: {train: /d.gz}\nmodel: resnet50\noptim: adamw\n"),
                                 no_path_checks({"train.global_batch=8"}));
  REQUIRE(named.size() == 2);
  CHECK_THAT(named[0], Catch::EndsWith("model: is a section, not a value; set its keys: arch, num_classes, image_size, in_channels, "
                                       "small_stem, sync_bn, drop_path, grad_checkpointing, pretrained, pretrained_strict; to "
                                       "choose one, write model: {arch: resnet50}"));
  CHECK_THAT(named[1], Catch::EndsWith("; to choose one, write optim: {name: adamw}"));
  // A nested section too (it was "unknown key (did you mean 'train.seed'?)").
  const auto nested = problems_of(dir.write("plain.yaml", "data: {train: /d.gz}\n"),
                                  no_path_checks({"train.global_batch=8", "train.ema=0.999", "augment.random_erasing=0.25"}));
  REQUIRE(nested.size() == 2);
  CHECK_THAT(nested[0], Catch::EndsWith("augment.random_erasing: is a section, not a value; set its keys: prob, mode, count, min_area, "
                                        "max_area, min_aspect; to choose one, write augment.random_erasing: {prob: 0.25}"));
  CHECK_THAT(nested[1], Catch::EndsWith("train.ema: is a section, not a value; set its keys: decay, warmup, every_steps; to choose one, "
                                        "write train.ema: {decay: 0.999}"));
  // data: synthetic names a format; the data keys it replaced are not blamed again ("no training data").
  const auto data =
      problems_of(dir.write("data.yaml", "data: {train: /d.gz}\ntrain: {global_batch: 8}\n"), no_path_checks({"data=synthetic"}));
  REQUIRE(data.size() == 1);
  CHECK_THAT(data[0], Catch::EndsWith("; to choose one, write data: {format: synthetic}"));
  CHECK_THAT(problems_of(dir.write("path.yaml", "train: {global_batch: 8}\ndata: /data/cifar\n"), no_path_checks()).at(0),
             Catch::EndsWith("; to choose one, write data: {train: /data/cifar}"));
  // An empty section (written {} or left empty) sets none of its keys; an empty leaf is still refused.
  for (const char* empty : {"augment: {}\n", "augment:\n", "distributed: {}\nobserve:\n"}) {
    const Recipe r = load_recipe(dir.write("empty.yaml", std::string("data: {train: /d.gz}\n") + empty), no_path_checks({"train.global_batch=8"}));
    CHECK(r.augment.hflip.p == 0);
  }
  CHECK_THAT(problems_of(dir.write("leaf.yaml", "data: {train: /d.gz}\noptim: {lr: }\n"), no_path_checks({"train.global_batch=8"})).at(0),
             Catch::Contains("optim.lr: expected a number, got nothing"));
}

TEST_CASE("unknown model names are rejected with the list of known ones", "[recipe]") {
  TempDir dir;
  LoadOptions options = no_path_checks({"model.arch=resnet19"});
  options.check_model = recipe_model_problems;
  const auto problems = problems_of(dir.write("r.yaml", kMinimal), options);
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Catch::Contains("override 'model.arch=resnet19': model.arch: unknown model") &&
                              Catch::Contains("did you mean 'resnet18'?") && Catch::Contains("small_cnn"));
}

TEST_CASE("the printed recipe loads back to the same recipe", "[recipe]") {
  TempDir dir;
  const Recipe first = load_recipe(dir.write("r.yaml", kMinimal), no_path_checks({"optim.lr=0.1", "augment.random_resized_crop=[0.08, 1]",
                                                                                  "optim.eps=1e-8", "optim.weight_decay=5e-5"}));
  const std::string printed = recipe_to_yaml(first);
  CHECK_THAT(printed, Catch::Contains("lr: 0.1\n") && Catch::Contains("random_resized_crop: [0.08, 1]"));
  // With a dot before the exponent, so that YAML 1.1 readers (PyYAML) read numbers, not strings.
  CHECK_THAT(printed, Catch::Contains("eps: 1.0e-08\n") && Catch::Contains("weight_decay: 5.0e-05\n"));
  const Recipe second = load_recipe(dir.write("printed.yaml", printed), no_path_checks());
  CHECK(recipe_to_yaml(second) == printed);
}

TEST_CASE("a list key given one value is told how to write it as a list", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", kMinimal);
  const auto problems = problems_of(path, no_path_checks({"schedule.milestones=30", "augment.random_resized_crop=true"}));
  REQUIRE(problems.size() == 2);
  CHECK_THAT(problems[0], Catch::EndsWith("augment.random_resized_crop: expected a list of numbers, e.g. [0.5, 1.0], got 'true'"));
  CHECK_THAT(problems[1], Catch::EndsWith("schedule.milestones: expected a list of numbers; for this one alone, write [30]"));
}

TEST_CASE("data.mean and data.std on the 0-255 scale (mmcv's) are refused with the values divided by 255", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", kMinimal);
  const auto problems = problems_of(path, no_path_checks({"data.mean=[123.675, 116.28, 103.53]", "data.std=[58.395, 57.12, 57.375]"}));
  REQUIRE(problems.size() == 2);
  CHECK_THAT(problems[0], Catch::Contains("data.mean: [123.675, 116.28, 103.53] is on the 0-255 scale") &&
                              Catch::EndsWith("divide by 255, [0.485, 0.456, 0.406]"));
  CHECK_THAT(problems[1],
             Catch::Contains("data.std: [58.395, 57.12, 57.375] is on the 0-255 scale") && Catch::EndsWith("[0.229, 0.224, 0.225]"));
  CHECK_NOTHROW(load_recipe(path, no_path_checks({"data.mean=[0.5]", "data.std=[1.0]"})));  // 1 itself is allowed
}

TEST_CASE("cvtrain models lists every architecture with the model its weights are named after and its switches", "[recipe]") {
  const std::string table = architecture_table();
  for (const std::string& name : model_names()) CHECK_THAT(table, Catch::Contains("\n" + name + " "));
  const auto row = [&](const std::string& name) {
    const size_t at = table.find("\n" + name + " ");
    return table.substr(at + 1, table.find('\n', at + 1) - at - 1);
  };
  CHECK_THAT(row("resnet50"), Catch::Contains("torchvision resnet50 ") && Catch::Contains("small_stem, drop_path, grad_checkpointing") &&
                                  Catch::EndsWith("any"));
  CHECK_THAT(row("vit_base_patch16"),
             Catch::Contains("timm vit_base_patch16_224 ") && !Catch::Contains("small_stem") && Catch::EndsWith("a multiple of 16"));
  CHECK_THAT(row("swin_small_patch4_window7"), Catch::Contains("classification timm swin_small_patch4_window7_224 ") &&
                                                   Catch::Contains("drop_path, grad_checkpointing") && Catch::EndsWith("a multiple of 4"));
  CHECK_THAT(row("convnext_tiny"), Catch::Contains("timm convnext_tiny "));
  CHECK_THAT(row("small_cnn"), Catch::Contains("cvtrain's own") && Catch::Contains(" - "));
}

TEST_CASE("switches of other architectures are errors, not silently ignored", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", kMinimal);
  const auto problems = [&](std::vector<std::string> overrides) {
    LoadOptions options = no_path_checks(std::move(overrides));
    options.check_model = recipe_model_problems;
    return problems_of(path, options);
  };
  CHECK_THAT(problems({"model.arch=vit_base_patch16", "model.small_stem=true"})[0],
             Catch::Contains("override 'model.small_stem=true': model.small_stem: only ResNets have it, not vit_base_patch16"));
  CHECK_THAT(problems({"model.arch=mlp", "model.drop_path=0.1"})[0],
             Catch::Contains("model.drop_path: only ConvNeXts, DeepLabV3s, FCNs, ResNets, SegFormers, Swins and ViTs have it, not mlp"));
  CHECK_THAT(problems({"model.grad_checkpointing=true"})[0],
             Catch::Contains("model.grad_checkpointing: small_cnn has no residual blocks to recompute; ConvNeXts, DeepLabV3s, FCNs, "
                             "ResNets, SegFormers, Swins and ViTs do"));
  // A ViT's patches must tile the image: reported with the recipe, before any run folder exists.
  CHECK_THAT(problems({"model.arch=vit_tiny_patch16", "model.image_size=40"})[0],
             Catch::Contains("model.image_size: 40 is not a multiple of the patch size 16 of vit_tiny_patch16"));
  for (const char* arch : {"resnet18", "vit_tiny_patch16", "convnext_tiny"}) {
    LoadOptions options = no_path_checks({std::string("model.arch=") + arch, "model.grad_checkpointing=true", "model.image_size=32"});
    options.check_model = recipe_model_problems;
    CHECK(load_recipe(path, options).model.grad_checkpointing);
  }
}

TEST_CASE("a recipe a run saved keeps the world size its batch triple implies", "[recipe]") {
  TempDir dir;
  // Saved by an 8-rank run; read back on a machine where nproc_per_node: auto means 1.
  LoadOptions options = no_path_checks();
  options.saved_by_run = true;
  const Recipe r = load_recipe(dir.write("r.yaml", "data: {train: /d.gz}\nstrategy: ddp\ntrain: {global_batch: 1024, micro_batch: 32, accumulation: 4}\n"), options);
  CHECK(r.train.global_batch == 1024);
  options.saved_by_run = false;
  CHECK_THROWS_AS(load_recipe(dir.file("r.yaml"), options), RecipeError);
}

TEST_CASE("micro_batch: auto needs a GPU and a global batch, and prints back as auto", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", "data: {train: /d.gz}\ntrain: {global_batch: 256, micro_batch: auto}\n");
  CHECK_THAT(problems_of(path, no_path_checks())[0], Catch::Contains(path + ":2: train.micro_batch: auto searches GPU memory") &&
                                                        Catch::Contains("this run has no GPU"));
  LoadOptions gpu = no_path_checks();
  gpu.visible_gpus = 1;
  const Recipe r = load_recipe(path, gpu);
  CHECK(r.train.micro_batch_auto);
  CHECK(r.train.micro_batch == 256);  // provisional: the trainer probes the GPU
  CHECK_THAT(recipe_to_yaml(r), Catch::Contains("micro_batch: auto") && !Catch::Contains("accumulation:"));
  gpu.overrides = {"train.accumulation=2"};
  CHECK_THAT(problems_of(path, gpu)[0], Catch::Contains("train.accumulation: is derived when train.micro_batch is auto"));
  gpu.overrides = {"strategy=fsdp"};
  CHECK_THAT(problems_of(path, gpu)[0], Catch::Contains("auto is not available with strategy fsdp"));
  gpu.overrides = {"train.micro_batch=autoo"};
  CHECK_THAT(problems_of(path, gpu)[0], Catch::Contains("train.micro_batch"));
}

TEST_CASE("a key set twice in one map is an error naming both lines, at any depth", "[recipe]") {
  TempDir dir;
  const std::string top = dir.write("top.yaml", "data: {train: /d.gz}\ntrain: {global_batch: 64}\nprecision: bf16\nprecision: fp16\n");
  auto problems = problems_of(top, no_path_checks());
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Catch::Contains(top + ":4: precision: set twice in one map (first at line 3)"));

  const std::string nested = dir.write("nested.yaml", "data:\n  train: /d.gz\ntrain:\n  global_batch: 64\n  epochs: 3\n  epochs: 30\n");
  problems = problems_of(nested, no_path_checks());
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Catch::Contains(nested + ":6: train.epochs: set twice in one map (first at line 5)"));

  const std::string child = dir.write("child.yaml", "base: nested.yaml\noptim: {lr: 0.1}\n");
  CHECK_THAT(problems_of(child, no_path_checks())[0], Catch::Contains(nested + ":6: train.epochs"));
}

TEST_CASE("an empty recipe file is reported as empty, not as missing keys", "[recipe]") {
  TempDir dir;
  for (const char* text : {"", "\n\n", "# only a comment\n", "---\n"}) {
    const std::string path = dir.write("empty.yaml", text);
    const auto problems = problems_of(path, no_path_checks());
    REQUIRE(problems.size() == 1);
    CHECK_THAT(problems[0], Catch::StartsWith(path + ": the recipe file is empty"));
  }
  dir.write("empty_base.yaml", "");
  const std::string child = dir.write("child.yaml", std::string("base: empty_base.yaml\n") + kMinimal);
  CHECK_THAT(problems_of(child, no_path_checks())[0], Catch::Contains("empty_base.yaml: the recipe file is empty"));
}

// The recipe keeps `auto` as written; the run plan resolves it for the world its batch was completed for.
namespace {
RunPlan planned(const Recipe& r) { return RunPlan::of(r, BatchPlan::of(r.train).world); }
}  // namespace

TEST_CASE("strategy auto stays in the recipe, its plan single for one rank and ddp for more, and an explicit single needs one rank",
          "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", kMinimal);
  const Recipe one = load_recipe(path, no_path_checks());
  CHECK(one.strategy == StrategyKind::kAuto);
  CHECK(planned(one).strategy == StrategyKind::kSingle);
  LoadOptions two = no_path_checks();
  two.world_size = 2;
  CHECK(planned(load_recipe(path, two)).strategy == StrategyKind::kDdp);
  two.overrides = {"strategy=zero2"};
  CHECK(planned(load_recipe(path, two)).strategy == StrategyKind::kZero2);
  const Recipe four = load_recipe(path, no_path_checks({"distributed.nproc_per_node=4"}));
  CHECK(planned(four).batch.world == 4);
  CHECK(planned(four).strategy == StrategyKind::kDdp);
  two.overrides = {"strategy=single"};
  CHECK_THAT(problems_of(path, two)[0], Catch::Contains("'single' runs one process but the job has 2 ranks"));
}

TEST_CASE("a loaded recipe remembers where each key was set, for errors found later", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", kMinimal);
  const Recipe r = load_recipe(path, no_path_checks({"model.num_classes=100"}));
  CHECK(r.where("data.train") == path + ":1: data.train");
  CHECK(r.where("model.num_classes") == "override 'model.num_classes=100': model.num_classes");
  CHECK(r.where("model.in_channels") == path + " (not set): model.in_channels");
}

TEST_CASE("checkpoint.resume reads auto, none (also true and false) or a folder, and prints back as written", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", kMinimal);
  CHECK(load_recipe(path, no_path_checks()).checkpoint.resume.mode == ResumeMode::kAuto);
  CHECK(load_recipe(path, no_path_checks({"checkpoint.resume=none"})).checkpoint.resume.mode == ResumeMode::kNone);
  // YAML's booleans and Python's None say what they mean, not folders named so.
  for (const char* off : {"false", "no", "off", "None"})
    CHECK(load_recipe(path, no_path_checks({std::string("checkpoint.resume=") + off})).checkpoint.resume.mode == ResumeMode::kNone);
  for (const char* on : {"true", "yes", "on"})
    CHECK(load_recipe(path, no_path_checks({std::string("checkpoint.resume=") + on})).checkpoint.resume.mode == ResumeMode::kAuto);
  const Recipe from_folder = load_recipe(path, no_path_checks({"checkpoint.resume=runs/a/checkpoints/step-00000010"}));
  CHECK(from_folder.checkpoint.resume.mode == ResumeMode::kFolder);
  CHECK(from_folder.checkpoint.resume.folder == "runs/a/checkpoints/step-00000010");
  CHECK_THAT(recipe_to_yaml(from_folder), Catch::Contains("resume: runs/a/checkpoints/step-00000010\n"));
  const std::vector<std::string> problems = problems_of(path, no_path_checks({"checkpoint.resume="}));
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Catch::Contains("checkpoint.resume: expected auto, none or the path of a checkpoint folder"));

  // With the paths checked, a folder that is not there is the recipe's error, named before any work.
  const std::string data = dir.write("train.gz", "");
  LoadOptions checked;
  checked.overrides = {"data.train=" + data, "checkpoint.resume=" + dir.file("nowhere")};
  const std::vector<std::string> missing = problems_of(path, checked);
  REQUIRE(missing.size() == 1);
  CHECK_THAT(missing[0], Catch::Contains("override 'checkpoint.resume=" + dir.file("nowhere") + "': checkpoint.resume: '" +
                                         dir.file("nowhere") + "' is not a folder"));
  std::filesystem::create_directories(dir.file("run"));
  checked.overrides[1] = "checkpoint.resume=" + dir.file("run");
  CHECK(load_recipe(path, checked).checkpoint.resume.folder == dir.file("run"));
}

TEST_CASE("output names the run folder and cannot be empty", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", kMinimal);
  CHECK(load_recipe(path, no_path_checks()).output == "runs/default");
  const std::vector<std::string> problems = problems_of(path, no_path_checks({"output="}));
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Catch::Contains("override 'output=': output: names the run folder"));
}

TEST_CASE("a profile window is [first, last] within the limit, on whole rank numbers", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", kMinimal);
  const Recipe r = load_recipe(path, no_path_checks({"profile={steps: [20, 25], ranks: [0, 3]}"}));
  CHECK(r.profile.steps == std::vector<double>{20, 25});
  CHECK(r.profile.ranks == std::vector<double>{0, 3});
  CHECK(load_recipe(path, no_path_checks()).profile.steps.empty());
  CHECK(load_recipe(path, no_path_checks()).profile.tool == ProfileTool::kKineto);
  CHECK(load_recipe(path, no_path_checks({"profile.tool=nsys"})).profile.tool == ProfileTool::kNsys);
  CHECK_THAT(problems_of(path, no_path_checks({"profile.tool=nsyss"})).at(0),
             Catch::Contains("profile.tool: 'nsyss' is not one of: kineto, nsys (did you mean 'nsys'?)"));
  CHECK_THAT(problems_of(path, no_path_checks({"profile.steps=[5, 40]"})).at(0),
             Catch::Contains("profile.steps: a trace covers at most 20 steps (it grows with every step), got 36"));
  CHECK_THAT(problems_of(path, no_path_checks({"profile.steps=[5, 3]"})).at(0), Catch::Contains("profile.steps: expected [first, last]"));
  CHECK_THAT(problems_of(path, no_path_checks({"profile.ranks=[0.5]"})).at(0), Catch::Contains("profile.ranks: expected rank numbers"));
}

TEST_CASE("timm's schedule and evaluation keys: warmup_lr, warmup_prefix, step_on_epochs, eval_crop_fraction", "[recipe]") {
  TempDir dir;
  const std::string good = dir.write("good.yaml", "data: {train: /data/train.gz, eval_crop_fraction: 0.95}\n"
                                                      "train: {global_batch: 64}\n"
                                                      "schedule: {warmup_epochs: 5, warmup_lr: 1.0e-6, warmup_prefix: false, step_on_epochs: true}\n");
  const Recipe r = load_recipe(good, no_path_checks());
  CHECK(r.data.eval_crop_fraction == 0.95);
  CHECK(r.schedule.warmup_lr == 1e-6);
  CHECK_FALSE(r.schedule.warmup_prefix);
  CHECK(r.schedule.step_on_epochs);
  CHECK_THAT(recipe_to_yaml(r), Catch::Contains("eval_crop_fraction: 0.95") && Catch::Contains("step_on_epochs: true"));
  CHECK(load_recipe(dir.write("plain.yaml", kMinimal), no_path_checks()).schedule.warmup_lr < 0);  // cvtrain's own ramp
  const std::string bad = dir.write("bad.yaml", "train: {global_batch: 64}\n"
                                                    "optim: {lr: 0.1}\n"
                                                    "data: {train: /data/train.gz, eval_crop_fraction: 1.2}\n"
                                                    "schedule: {warmup_lr: 0.5}\n");
  const auto problems = problems_of(bad, no_path_checks());
  REQUIRE(problems.size() == 2);
  CHECK_THAT(problems[0], Catch::Contains(bad + ":3: data.eval_crop_fraction") && Catch::Contains("must be in (0, 1]"));
  CHECK_THAT(problems[1], Catch::Contains("schedule.warmup_lr") && Catch::Contains("above optim.lr 0.1"));
}

TEST_CASE("schedule.cooldown_epochs: part of train.epochs, cosine only, warned when it leaves the cosine nothing", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", std::string(kMinimal) + "schedule: {warmup_epochs: 5, cooldown_epochs: 10}\n");
  const Recipe deit = load_recipe(path, no_path_checks({"train.epochs=310"}));
  CHECK(deit.schedule.cooldown_epochs == 10);
  CHECK(recipe_warnings(deit).empty());
  CHECK_THAT(recipe_to_yaml(deit), Catch::Contains("cooldown_epochs: 10"));
  const auto short_run = recipe_warnings(load_recipe(path, no_path_checks({"train.epochs=15"})));
  REQUIRE(short_run.size() == 1);
  CHECK_THAT(short_run[0], Catch::Contains(path + ":3: schedule.cooldown_epochs: 10 and the warmup's 5 leave no epoch of train.epochs 15"));
  CHECK(recipe_warnings(load_recipe(path, no_path_checks({"train.epochs=15", "schedule.warmup_prefix=false"}))).empty());
  const auto step = problems_of(path, no_path_checks({"train.epochs=310", "schedule.name=step", "schedule.milestones=[100]"}));
  REQUIRE(step.size() == 1);
  CHECK_THAT(step[0], Catch::Contains("schedule.cooldown_epochs: holds the cosine's end (min_lr)") && Catch::Contains("schedule 'step'"));
  CHECK_THAT(problems_of(path, no_path_checks({"schedule.cooldown_epochs=-1"})).at(0), Catch::Contains("schedule.cooldown_epochs"));
}

TEST_CASE("train.cuda_graphs plans the fused optimizer and refuses one that decides on the host", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", kMinimal);
  const Recipe graphed = load_recipe(path, no_path_checks({"train.cuda_graphs=true"}));
  CHECK(graphed.optim.implementation == OptimImplementation::kAuto);  // as written
  CHECK(planned(graphed).optimizer_path == OptimImplementation::kFused);
  CHECK(planned(load_recipe(path, no_path_checks())).optimizer_path == OptimImplementation::kAuto);
  const std::vector<std::string> foreach = problems_of(path, no_path_checks({"train.cuda_graphs=true", "optim.implementation=foreach"}));
  REQUIRE(foreach.size() == 1);
  CHECK_THAT(foreach[0], Catch::Contains("optim.implementation") && Catch::Contains("use fused"));
  const std::vector<std::string> lamb = problems_of(path, no_path_checks({"train.cuda_graphs=true", "optim.name=lamb"}));
  REQUIRE(lamb.size() == 1);
  CHECK_THAT(lamb[0], Catch::Contains("train.cuda_graphs") && Catch::Contains("lamb"));
}

TEST_CASE("data.decoder nvjpeg is refused where it cannot serve, naming the key that stands in its way", "[recipe]") {
  TempDir dir;
  const std::string path = dir.write("r.yaml", kMinimal);
  CHECK(load_recipe(path, no_path_checks()).data.decoder == DecoderKind::kCpu);
  LoadOptions gpu = no_path_checks({"data.format=imagefolder", "data.decoder=nvjpeg"});
  gpu.visible_gpus = 1;
  CHECK(load_recipe(path, gpu).data.decoder == DecoderKind::kNvjpeg);
  const std::vector<std::string> idx = problems_of(path, no_path_checks({"data.decoder=nvjpeg", "device=cuda"}));
  REQUIRE(idx.size() == 1);
  CHECK_THAT(idx[0], Catch::Contains("data.decoder") && Catch::Contains("data.format idx holds none"));
  const std::vector<std::string> no_gpu = problems_of(path, no_path_checks({"data.format=imagefolder", "data.decoder=nvjpeg"}));
  REQUIRE(no_gpu.size() == 1);
  CHECK_THAT(no_gpu[0], Catch::Contains("data.decoder") && Catch::Contains("this run has none"));
  gpu.overrides.push_back("augment.auto_augment=rand-m9-mstd0.5");
  const std::vector<std::string> augment = problems_of(path, gpu);
  REQUIRE(augment.size() == 1);
  CHECK_THAT(augment[0], Catch::Contains("augment.auto_augment") && Catch::Contains("data.decoder cpu"));
  const std::vector<std::string> typo = problems_of(path, no_path_checks({"data.decoder=nvjepg"}));
  REQUIRE(typo.size() == 1);
  CHECK_THAT(typo[0], Catch::Contains("did you mean 'nvjpeg'"));
  CHECK(load_recipe(path, no_path_checks({"data.decoder=auto", "augment.color_jitter=0.4"})).data.decoder == DecoderKind::kAuto);
}
