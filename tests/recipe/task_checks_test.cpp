// task: what goes with classification and what with segmentation, checked as the recipe loads.
#include <catch2/catch.hpp>

#include "cvtrain/core/error.h"
#include "cvtrain/models/arch_traits.h"
#include "cvtrain/recipe/recipe_loader.h"
#include "cvtrain/recipe/task_checks.h"
#include "temp_dir.h"

using namespace cvtrain;
using cvtrain::testing::TempDir;

namespace {

constexpr const char* kSegmentation =
    "task: segmentation\n"
    "model: {arch: fcn_resnet18, num_classes: 4, image_size: 64}\n"
    "data: {train: /d/VOC/ImageSets/Segmentation/train.txt}\n"
    "train: {global_batch: 8}\n";

LoadOptions overriding(std::vector<std::string> overrides) {
  LoadOptions options;
  options.overrides = std::move(overrides);
  options.check_paths = false;
  options.check_model = recipe_model_problems;
  return options;
}

std::string task_problems_of(const std::string& path, const LoadOptions& options) {
  try {
    load_recipe(path, options);
  } catch (const RecipeError& e) {
    std::string all;
    for (const auto& p : e.problems()) all += p + "\n";
    return all;
  }
  return "";
}

}  // namespace

TEST_CASE("a segmentation recipe resolves its format from the path, its best metric and its crop", "[recipe]") {
  TempDir dir;
  const Recipe r = load_recipe(dir.write("seg.yaml", kSegmentation), overriding({"augment.crop_size=[48, 80]"}));
  CHECK(r.data.format == DataFormat::kVoc);
  CHECK(resolved_best_metric(r) == BestMetric::kMiou);
  CHECK(crop_size(r) == std::pair<int64_t, int64_t>{48, 80});
  CHECK(square_side_of_training_input(r) == 62);  // sqrt(48 x 80) = 61.97
  const Recipe csv = load_recipe(dir.write("csv.yaml", kSegmentation), overriding({"data.train=/d/pairs.csv"}));
  CHECK(csv.data.format == DataFormat::kList);
  const Recipe classification = load_recipe(dir.write("c.yaml", "data: {train: /d/t.gz}\ntrain: {global_batch: 8}\n"), overriding({}));
  CHECK(resolved_best_metric(classification) == BestMetric::kTop1);
  CHECK(crop_size(classification) == std::pair<int64_t, int64_t>{28, 28});
}

TEST_CASE("segmentation refuses classification's augmentations, losses, formats and models, naming each key", "[recipe]") {
  TempDir dir;
  const std::string seg = dir.write("seg.yaml", kSegmentation);
  CHECK_THAT(task_problems_of(seg, overriding({"augment.mixup=0.8"})), Catch::Contains("augment.mixup: is for task: classification"));
  CHECK_THAT(task_problems_of(seg, overriding({"augment.random_resized_crop=[0.08, 1]"})),
             Catch::Contains("augment.random_resized_crop: is for task: classification"));
  CHECK_THAT(task_problems_of(seg, overriding({"train.loss=bce"})), Catch::Contains("train.loss: is for task: classification"));
  CHECK_THAT(task_problems_of(seg, overriding({"data.format=imagefolder"})),
             Catch::Contains("data.format: imagefolder holds images with class labels"));
  CHECK_THAT(
      task_problems_of(seg, overriding({"model.arch=resnet18"})),
      Catch::Contains("model.arch: resnet18 is a classification model and task is segmentation") && Catch::Contains("deeplabv3_resnet50"));
  CHECK_THAT(task_problems_of(seg, overriding({"train.class_weights=[1, 2]"})),
             Catch::Contains("train.class_weights: has 2 values and model.num_classes is 4"));
  CHECK_THAT(task_problems_of(seg, overriding({"data.ignore_index=3"})), Catch::Contains("data.ignore_index: 3 is a class id"));
  CHECK_THAT(task_problems_of(seg, overriding({"checkpoint.keep_best=top1"})),
             Catch::Contains("checkpoint.keep_best: top-1 is a classification score"));
  CHECK_THAT(task_problems_of(seg, overriding({"augment.crop_size=[512]"})), Catch::Contains("augment.crop_size: expected [height, width]"));
  CHECK_THAT(task_problems_of(seg, overriding({"augment.ratio_range=[2, 0.5]"})), Catch::Contains("augment.ratio_range: expected [min, max]"));
  CHECK_THAT(task_problems_of(seg, overriding({"checkpoint.keep_best=miou_ema"})), Catch::Contains("miou_ema judges the weight average"));
  CHECK(
      task_problems_of(seg, overriding({"augment.scale=[2048, 512]", "augment.photometric=true", "train.class_weights=[1, 1, 2, 2]"})).empty());
}

TEST_CASE("classification refuses segmentation's keys, formats and models", "[recipe]") {
  TempDir dir;
  const std::string c = dir.write("c.yaml", "data: {train: /d/t.gz}\ntrain: {global_batch: 8}\n");
  CHECK_THAT(task_problems_of(c, overriding({"augment.crop_size=[64, 64]"})),
             Catch::Contains("augment.crop_size: is for task: segmentation (masks); this recipe's task is classification"));
  CHECK_THAT(task_problems_of(c, overriding({"data.format=voc"})),
             Catch::Contains("data.format: voc holds segmentation pairs; set task: segmentation"));
  CHECK_THAT(task_problems_of(c, overriding({"model.arch=deeplabv3_resnet50"})),
             Catch::Contains("model.arch: deeplabv3_resnet50 is a segmentation model and task is classification"));
  CHECK_THAT(task_problems_of(c, overriding({"checkpoint.keep_best=miou"})), Catch::Contains("mIoU is a segmentation score"));
}

TEST_CASE("sliding-window evaluation: its window and stride from the recipe or the crop, checked", "[recipe]") {
  TempDir dir;
  const std::string seg = dir.write("seg.yaml", kSegmentation);
  const Recipe r = load_recipe(seg, overriding({"data.eval_mode=slide", "augment.crop_size=[48, 96]"}));
  const SlidingWindow w = sliding_window(r);
  CHECK(w.height == 48);
  CHECK(w.width == 96);
  CHECK(w.stride_height == 32);  // two thirds, as mmseg's 512 / 341
  CHECK(w.stride_width == 64);
  const SlidingWindow given = sliding_window(load_recipe(seg, overriding({"data.eval_window=[40, 40]", "data.eval_stride=[20, 30]"})));
  CHECK(given.height == 40);
  CHECK(given.stride_width == 30);
  CHECK_THAT(task_problems_of(seg, overriding({"data.eval_window=[40, 40]", "data.eval_stride=[50, 30]"})),
             Catch::Contains("data.eval_stride: [50, 30] is wider than the window [40, 40]"));
  const std::string c = dir.write("c.yaml", "data: {train: /d/t.gz}\ntrain: {global_batch: 8}\n");
  CHECK_THAT(task_problems_of(c, overriding({"data.eval_mode=slide"})), Catch::Contains("data.eval_mode: is for task: segmentation"));
}

TEST_CASE("optim.lr_mult needs whole parameters and multipliers above 0", "[recipe]") {
  TempDir dir;
  const std::string seg = dir.write("seg.yaml", kSegmentation);
  CHECK(load_recipe(seg, overriding({"optim.lr_mult={classifier: 10}"})).optim.lr_mult.at("classifier") == 10);
  CHECK_THAT(task_problems_of(seg, overriding({"optim.lr_mult={classifier: 10}", "strategy=zero2"})),
             Catch::Contains("optim.lr_mult: zero2 updates flat shards that cut across modules"));
  CHECK_THAT(task_problems_of(seg, overriding({"optim.lr_mult={classifier: 0}"})), Catch::Contains("multipliers above 0"));
  CHECK_THAT(task_problems_of(seg, overriding({"optim.lr_mult=[10]"})), Catch::Contains("expected a map of names to numbers"));
  CHECK_THAT(task_problems_of(seg, overriding({"optim.lr_mult={classifier:10}"})),
             Catch::Contains("'classifier:10' has no value: YAML needs a space after the colon, {classifier: 10}"));
}

TEST_CASE("DeepLabV3 with one image per rank is refused naming train.micro_batch, unless sync_bn shares its statistics", "[recipe]") {
  TempDir dir;
  const std::string seg = dir.write("seg.yaml", kSegmentation);
  const auto with = [](std::vector<std::string> more) {
    more.push_back("model.arch=deeplabv3_resnet18");
    return overriding(more);
  };
  CHECK_THAT(task_problems_of(seg, with({"train.micro_batch=1", "train.global_batch=1"})),
             Catch::Contains("train.micro_batch: 1 image per rank cannot train deeplabv3_resnet18") &&
                 Catch::Contains("share its statistics across ranks with model.sync_bn: true (on 2 or more ranks)"));
  CHECK(task_problems_of(seg, with({"train.micro_batch=2"})).empty());
  // Two ranks of one image each: only shared statistics see two values per channel.
  LoadOptions two = with({"train.global_batch=2", "distributed.nproc_per_node=2"});
  CHECK_THAT(task_problems_of(seg, two),
             Catch::Contains("train.micro_batch: 1 image per rank") && Catch::EndsWith("with model.sync_bn: true\n"));
  two.overrides.push_back("model.sync_bn=true");
  CHECK(task_problems_of(seg, two).empty());
  // An FCN's BatchNorms see whole maps: one image trains.
  CHECK(task_problems_of(seg, overriding({"train.global_batch=1"})).empty());
}

TEST_CASE("segmentation takes at most 255 classes, since masks hold one byte per pixel", "[recipe]") {
  TempDir dir;
  const std::string seg = dir.write("seg.yaml", kSegmentation);
  CHECK(task_problems_of(seg, overriding({"model.num_classes=255"})).empty());
  const std::string problems = task_problems_of(seg, overriding({"model.num_classes=256"}));
  CHECK_THAT(problems, Catch::Contains("model.num_classes: 256 classes, but masks hold one byte per pixel"));
  CHECK_THAT(problems, !Catch::Contains("data.ignore_index:"));  // one problem, said once
}
