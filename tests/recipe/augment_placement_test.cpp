// Every key of the augment section declares where its operation runs; a key on that needs the
// CPU's pixels is what data.decoder nvjpeg refuses, and no other key is.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "cvtrain/recipe/augment_placement.h"
#include "cvtrain/recipe/recipe_loader.h"
#include "cvtrain/recipe/recipe_schema.h"
#include "temp_dir.h"

using namespace cvtrain;

namespace {

// A value that turns each operation on. A key new to the section needs one here (and a row in the
// placement table): the first test case names it until it has both.
const std::map<std::string, std::string> kTurnedOn = {
    {"augment.hflip", "true"},
    {"augment.vflip", "true"},
    {"augment.random_crop_padding", "4"},
    {"augment.random_resized_crop", "[0.08,1.0]"},
    {"augment.label_smoothing", "0.1"},
    {"augment.mixup", "0.8"},
    {"augment.cutmix", "1.0"},
    {"augment.auto_augment", "rand-m9-mstd0.5-inc1"},
    {"augment.color_jitter", "0.4"},
    {"augment.random_erasing.prob", "0.25"},
    {"augment.repeats", "3"},
};

AugmentSpec with(const cvtrain::testing::TempDir& dir, const std::vector<std::string>& overrides) {
  LoadOptions options;
  options.check_paths = false;
  options.overrides = overrides;
  return load_recipe(dir.write("r.yaml", "data: {train: t.gz}\ntrain: {global_batch: 64}\n"), options).augment;
}

}  // namespace

TEST_CASE("every augment key declares where it runs, and each one that turns an operation on can be turned on", "[recipe]") {
  std::set<std::string> declared;
  for (const AugmentPlacement& row : augment_placements()) {
    INFO(row.key);
    CHECK(declared.insert(row.key).second);  // once
    if (row.active) CHECK(kTurnedOn.count(row.key) == 1);
  }
  const std::vector<std::string> keys = recipe_keys();
  for (const std::string& key : keys)
    if (key.rfind("augment.", 0) == 0) {
      INFO(key << ": add a row to augment_placements() (recipe/augment_placement.cpp)");
      CHECK(declared.count(key) == 1);
    }
  for (const std::string& key : declared) {
    INFO(key);
    CHECK(std::find(keys.begin(), keys.end(), key) != keys.end());
  }
}

TEST_CASE("data.decoder nvjpeg's refusal follows the table: exactly the operations that need the CPU's pixels", "[recipe]") {
  cvtrain::testing::TempDir dir;
  const AugmentSpec defaults = with(dir, {});
  CHECK(augment_needing_cpu_pixels(defaults) == nullptr);
  for (const AugmentPlacement& row : augment_placements()) {
    if (!row.active) continue;
    INFO(row.key);
    CHECK_FALSE(row.active(defaults));  // off unless asked for
    const AugmentSpec on = with(dir, {std::string(row.key) + "=" + kTurnedOn.at(row.key)});
    CHECK(row.active(on));
    const char* refused = augment_needing_cpu_pixels(on);
    if (row.place == AugmentPlace::kCpuPixels) {
      REQUIRE(refused != nullptr);
      CHECK(std::string(refused) == row.key);
    } else {
      CHECK(refused == nullptr);
    }
  }
}
