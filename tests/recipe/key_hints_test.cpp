// Unknown recipe keys get the key meant: names from timm, torchvision, Lightning and Hugging Face,
// a key in the wrong section, another spelling; and a recipe that uses them is told so line by line.
#include <catch2/catch.hpp>

#include <algorithm>

#include "cvtrain/core/error.h"
#include "cvtrain/recipe/key_hints.h"
#include "cvtrain/recipe/recipe_loader.h"
#include "cvtrain/recipe/recipe_schema.h"
#include "temp_dir.h"

using namespace cvtrain;

TEST_CASE("an unknown key is told which of cvtrain's keys other tools' name means", "[recipe]") {
  const std::vector<std::string> keys = recipe_keys();
  const auto hint = [&](const std::string& key) { return key_hint(key, keys).value_or("(none)"); };
  CHECK_THAT(hint("train.batch_size"), Catch::StartsWith("cvtrain calls it train.micro_batch") && Catch::Contains("train.global_batch"));
  CHECK_THAT(hint("batch-size"), Catch::StartsWith("cvtrain calls it train.micro_batch"));  // timm's flag, as written
  CHECK(hint("optim.learning_rate") == "cvtrain calls it optim.lr");
  CHECK(hint("num_workers") == "cvtrain calls it data.workers");
  CHECK(hint("trainer.accumulate_grad_batches") == "cvtrain calls it train.accumulation");
  CHECK(hint("model.name") == "cvtrain calls it model.arch");
  CHECK(hint("data.type") == "cvtrain calls it data.format (auto tells it from data.train)");
  CHECK(hint("data.path") == "cvtrain calls it data.train (and data.val)");
  CHECK(hint("train.max_grad_norm") == "cvtrain calls it train.grad_clip (optim.max_grad_norm is LAMB's own scaling)");
  CHECK(hint("train.lr") == "did you mean 'optim.lr'?");          // the right name in another section
  CHECK(hint("train.precision") == "did you mean 'precision'?");  // a top-level key put in a section
  CHECK(hint("seed") == "did you mean 'train.seed'?");
  CHECK(hint("data.name") == "did you mean 'optim.name' or 'schedule.name'?");
  CHECK(hint("Train.Micro-Batch") == "keys are lower case with '_': 'train.micro_batch'");
  CHECK(hint("optim.lrr") == "(none)");  // a typo: left to the edit-distance guess
  CHECK(hint("foo.bar") == "(none)");
}

TEST_CASE("a choice another tool spells otherwise is told cvtrain's spelling, only where that choice is offered", "[recipe]") {
  const std::vector<std::string> precisions{"fp32", "tf32", "bf16", "fp16"};
  CHECK(value_hint("16-mixed", precisions) == "cvtrain spells it 'fp16'");
  CHECK(value_hint("bf16-mixed", precisions) == "cvtrain spells it 'bf16'");
  CHECK(value_hint("BFloat16", precisions) == "cvtrain spells it 'bf16'");
  CHECK(value_hint("32", precisions) == "cvtrain spells it 'fp32'");
  CHECK(value_hint("FP16", precisions) == "choices are lower case: 'fp16'");
  CHECK_FALSE(value_hint("fp8", precisions).has_value());
  CHECK_FALSE(value_hint("deepspeed_stage_2", precisions).has_value());  // a strategy's name, not a precision
  CHECK(value_hint("deepspeed_stage_2", {"auto", "single", "ddp", "zero1", "zero2", "fsdp"}) == "cvtrain spells it 'zero2'");
  CHECK(value_hint("adam", {"sgd", "adamw", "lamb", "lars"}) == "cvtrain spells it 'adamw': torch.optim.AdamW: decoupled weight decay");
}

TEST_CASE("every key a foreign name points at is one of cvtrain's keys", "[recipe]") {
  const std::vector<std::string> keys = recipe_keys();
  for (const std::string& target : foreign_name_targets()) {
    INFO(target);
    CHECK(std::find(keys.begin(), keys.end(), target) != keys.end());  // a renamed key must take its hints along
  }
  CHECK(foreign_name_targets().size() > 30);
}

TEST_CASE("a recipe ported from timm's arguments names each key it should use", "[recipe]") {
  cvtrain::testing::TempDir dir;
  const std::string path = dir.write("r.yaml",
                                     "model: {arch: resnet18, num_classes: 10}\n"
                                     "data: {format: synthetic}\n"
                                     "train: {epochs: 1, batch_size: 64}\n"
                                     "optim: {learning_rate: 0.1}\n"
                                     "lr: 0.2\n");
  LoadOptions options;
  options.check_paths = false;
  try {
    load_recipe(path, options);
    FAIL("a recipe with foreign key names loaded");
  } catch (const RecipeError& e) {
    const std::string message = e.what();
    CHECK_THAT(message, Catch::Contains(path + ":3: train.batch_size: unknown key; cvtrain calls it train.micro_batch"));
    CHECK_THAT(message, Catch::Contains(path + ":4: optim.learning_rate: unknown key; cvtrain calls it optim.lr"));
    CHECK_THAT(message, Catch::Contains(path + ":5: lr: unknown key; did you mean 'optim.lr'?"));
  }
  const std::string lightning = dir.write("l.yaml",
                                          "model: {arch: resnet18}\n"
                                          "data: {format: synthetic}\n"
                                          "precision: 16-mixed\n"
                                          "strategy: deepspeed_stage_2\n"
                                          "schedule: {name: CosineAnnealingLR}\n");
  try {
    load_recipe(lightning, options);
    FAIL("Lightning's spellings of choices were accepted");
  } catch (const RecipeError& e) {
    const std::string message = e.what();
    CHECK_THAT(message,
               Catch::Contains(lightning + ":3: precision: '16-mixed' is not one of: fp32, tf32, bf16, fp16 (cvtrain spells it 'fp16')"));
    CHECK_THAT(message, Catch::Contains(lightning + ":4: strategy: 'deepspeed_stage_2' is not one of:"));
    CHECK_THAT(message, Catch::Contains("(cvtrain spells it 'zero2')"));
    CHECK_THAT(
        message,
        Catch::Contains(lightning +
                        ":5: schedule.name: 'CosineAnnealingLR' is not one of: cosine, step, constant, poly (cvtrain spells it 'cosine')"));
  }
  options.overrides = {"optim.lrr=0.1"};
  CHECK_THROWS_WITH(load_recipe(dir.write("ok.yaml", "model: {arch: resnet18}\ndata: {format: synthetic}\n"), options),
                    Catch::Contains("optim.lrr: unknown key (did you mean 'optim.lr'?)"));
}
