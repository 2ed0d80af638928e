// Recipe changes since a checkpoint: the keys that change what is computed, not how the run is operated.
#include <catch2/catch.hpp>

#include "cvtrain/recipe/recipe.h"
#include "cvtrain/recipe/recipe_changes.h"
#include "cvtrain/recipe/recipe_schema.h"

using namespace cvtrain;

TEST_CASE("a resumed recipe's changes list data, optimizer and schedule keys, not operational ones", "[recipe]") {
  Recipe saved;
  saved.data.train = "/data/train";
  saved.train.global_batch = 64;
  Recipe now = saved;
  CHECK(recipe_changes(recipe_to_yaml(saved), recipe_to_yaml(now)).empty());

  now.data.max_samples = 3000;
  now.optim.lr = 0.05;
  now.data.mean = {0.5};
  now.output = "elsewhere";  // operational: not listed
  now.data.workers = WorkerCount::exactly(8);
  now.checkpoint.every_steps = 10;
  now.train.log_every = 7;
  now.distributed.nproc_per_node = "4";
  const auto changes = recipe_changes(recipe_to_yaml(saved), recipe_to_yaml(now));
  REQUIRE(changes.size() == 3);
  CHECK(changes[0].key == "data.max_samples");
  CHECK(changes[0].before == "0");
  CHECK(changes[0].after == "3000");
  CHECK(changes[1].key == "data.mean");
  CHECK(changes[1].after == "[0.5]");
  CHECK(changes[2].key == "optim.lr");
  CHECK(describe_changes(changes) == "data.max_samples 0 -> 3000, data.mean " + changes[1].before + " -> [0.5], optim.lr 0.1 -> 0.05");

  CHECK(describe_changes(changes, 1) == "data.max_samples 0 -> 3000 and 2 more");

  // A key that one recipe lacks (a checkpoint of an older cvtrain) is shown as unset.
  const auto older = recipe_changes("optim: {lr: 0.1}\n", "optim: {lr: 0.1, layer_decay: 0.75}\n");
  REQUIRE(older.size() == 1);
  CHECK(older[0].before == "(unset)");
}
