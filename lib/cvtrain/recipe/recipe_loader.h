// Loads a recipe: YAML file with `base:` inheritance, key.path=value overrides, then the schema
// (recipe_schema.h) and the rules across keys (recipe_checks.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

// One problem with one key of a recipe, reported with that key's origin.
struct KeyProblem {
  std::string key;
  std::string message;
};

struct LoadOptions {
  std::vector<std::string> overrides;  // "train.epochs=3", "optim.betas=[0.9,0.95]"
  int world_size = 0;                  // ranks sharing global_batch; 0: world_size_of(distributed)
  int visible_gpus = 0;                // what distributed.nproc_per_node: auto counts
  bool check_paths = true;             // data folders and files must exist
  bool check_machine = true;           // false: the job runs on another machine (`check --no-paths` on a
                                       // login node), so what needs its GPUs is left for its start
  bool saved_by_run = false;           // a recipe a run wrote back (a checkpoint's recipe.yaml): its
                                       // batch triple fixes the world size, whatever this machine has
  // The model section (and the training batch) against its architecture, with the job's world size
  // (models/arch_traits.h: recipe_model_problems); unset, not checked.
  std::function<std::vector<KeyProblem>(const Recipe&, int world)> check_model;
};

// Throws RecipeError listing every problem with its key and file:line.
Recipe load_recipe(const std::string& path, const LoadOptions& options = {});

// Ranks of the job the recipe describes: nnodes x nproc_per_node, `auto` counting `visible_gpus`
// (at least 1).
int world_size_of(const DistributedSpec& spec, int visible_gpus);

}  // namespace cvtrain
