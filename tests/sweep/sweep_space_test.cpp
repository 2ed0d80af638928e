// The search space file and the samplers: errors that name file:line and key, the grid's
// combinations, seeded random draws within the ranges, and TPE finding better values than random
// search at the same budget on a synthetic objective.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "cvtrain/core/error.h"
#include "cvtrain/recipe/recipe_loader.h"
#include "cvtrain/recipe/recipe_schema.h"
#include "cvtrain/sweep/successive_halving.h"
#include "cvtrain/sweep/trial_sampler.h"
#include "temp_dir.h"

using namespace cvtrain;
using cvtrain::testing::TempDir;

namespace {

std::vector<std::string> problems_of(const std::string& path) {
  try {
    load_sweep_space(path, recipe_keys());
  } catch (const RecipeError& e) {
    return e.problems();
  }
  FAIL("expected a RecipeError for " << path);
  return {};
}

constexpr const char* kPlainRecipe = "train: {global_batch: 64}\n";

SweepSpace space_of(const std::string& text) {
  TempDir dir;
  return load_sweep_space(dir.write("space.yaml", text), recipe_keys());
}

}  // namespace

TEST_CASE("a search space reads choices, grids and ranges, with the metric's direction", "[sweep]") {
  const SweepSpace s = space_of(
      "space:\n"
      "  optim.lr: {loguniform: [1.0e-4, 1.0e-1]}\n"
      "  optim.weight_decay: {uniform: [0, 0.1]}\n"
      "  train.micro_batch: {int: [16, 64]}\n"
      "  model.arch: [resnet18, resnet34]\n"
      "metric: val_loss\n"
      "trials: 6\n"
      "parallel: 2\n");
  REQUIRE(s.dimensions.size() == 4);
  CHECK(s.dimensions[0].kind == SearchDimension::Kind::kLogUniform);
  CHECK(s.dimensions[3].choices == std::vector<std::string>{"resnet18", "resnet34"});
  CHECK_FALSE(s.maximize);  // a loss is minimised unless mode says otherwise
  CHECK(s.trials == 6);
  CHECK(s.parallel == 2);
}

TEST_CASE("a space file written as a Weights & Biases sweep (or Optuna, Ray Tune) is told each key's name here", "[sweep]") {
  TempDir dir;
  const std::string wandb = dir.write("wandb.yaml",
                                      "method: bayes\n"
                                      "metric: {name: top1, goal: maximize}\n"
                                      "parameters:\n"
                                      "  optim.lr: {distribution: log_uniform_values, min: 1.0e-4, max: 1.0e-1}\n"
                                      "run_cap: 10\n");
  const auto top = problems_of(wandb);
  const auto has = [](const std::vector<std::string>& problems, const std::string& text) {
    return std::any_of(problems.begin(), problems.end(), [&](const std::string& p) { return p.find(text) != std::string::npos; });
  };
  CHECK(has(top, wandb + ":1: method: not a key of a search space file"));
  CHECK(has(top, "W&B's method: is sampler: here (grid, random or tpe; bayes is tpe)"));
  CHECK(has(top, wandb + ":2: metric: is one name here (metric: top1), and W&B's goal is mode: max or min beside it"));
  CHECK(has(top, wandb + ":3: parameters: not a key of a search space file"));
  CHECK(has(top, "W&B's parameters: is space: here"));
  CHECK(has(top, wandb + ":5: run_cap: not a key of a search space file"));
  CHECK(has(top, "W&B's run_cap is trials: here"));

  const std::string values = dir.write("values.yaml",
                                       "space:\n"
                                       "  optim.lr: {values: [0.1, 0.2]}\n"
                                       "  optim.weight_decay: {distribution: uniform, min: 0.0, max: 0.1}\n"
                                       "sampler: bayes\n"
                                       "mode: maximize\n");
  const auto inner = problems_of(values);
  CHECK(has(
      inner,
      values + ":2: optim.lr: 'values' is not a kind of search (choice, grid, uniform, loguniform, int) (W&B's values: is choice: here"));
  CHECK(has(inner, values + ":3: optim.weight_decay: expected one of"));
  CHECK(has(inner, "(W&B's distribution/min/max are one key here: {uniform: [min, max]}"));
  CHECK(has(inner, values + ":4: sampler: 'bayes' is not grid, random or tpe (W&B's bayes is tpe here)"));
  CHECK(has(inner, values + ":5: mode: 'maximize' is not max or min (max)"));
}

TEST_CASE("a bad search space is reported at once, each problem with its line and key", "[sweep]") {
  TempDir dir;
  const std::string path = dir.write("space.yaml",
                                     "space:\n"
                                     "  optim.learning_rate: {loguniform: [1.0e-4, 1.0e-1]}\n"
                                     "  optim.weight_decay: {uniform: [0.1, 0.1]}\n"
                                     "  optim.lr: {loguniform: [0, 0.1]}\n"
                                     "  augment.mixup: {choise: [0, 0.2]}\n"
                                     "sampler: grod\n"
                                     "paralel: 2\n");
  const auto problems = problems_of(path);
  REQUIRE(problems.size() == 6);
  CHECK_THAT(problems[0], Catch::Contains(path + ":7: paralel") && Catch::Contains("did you mean 'parallel'?"));
  CHECK_THAT(problems[1], Catch::Contains(path + ":2: optim.learning_rate: not a recipe key; cvtrain calls it optim.lr"));
  CHECK_THAT(problems[2], Catch::Contains(path + ":3: optim.weight_decay: the range [0.1, 0.1] is empty"));
  CHECK_THAT(problems[3], Catch::Contains("optim.lr: loguniform needs a low end above 0"));
  CHECK_THAT(problems[4], Catch::Contains("augment.mixup: 'choise' is not a kind of search") && Catch::Contains("did you mean 'choice'?"));
  CHECK_THAT(problems[5], Catch::Contains(path + ":6: sampler: 'grod' is not grid, random or tpe"));
  CHECK_THAT(problems_of(dir.write("grid.yaml", "space: {optim.lr: {uniform: [0.1, 0.2]}}\nsampler: grid\n"))[0],
             Catch::Contains("optim.lr: sampler: grid searches lists of values only"));
  // The usual slips with recipe keys: written at the top, or nested as in a recipe.
  const auto top = problems_of(dir.write("top.yaml", "optim.lr: {loguniform: [1.0e-4, 0.1]}\noptim: {momentum: [0.9]}\ntrials: 4\n"));
  REQUIRE(top.size() == 2);  // not also "space: needs at least one recipe key"
  CHECK_THAT(top[0], Catch::Contains(":1: optim.lr: a recipe key at the top of the file; the keys to search go under space:"));
  CHECK_THAT(top[1], Catch::Contains(":2: optim: a recipe key at the top") && Catch::Contains("space: {optim.momentum: ...}"));
  const auto nested = problems_of(dir.write("nested.yaml", "space: {optim: {lr: [0.1, 0.2]}}\n"));
  REQUIRE(nested.size() == 1);
  CHECK_THAT(nested[0], Catch::Contains("optim: a recipe section; search its keys dotted, e.g. optim.lr: [...]"));
}

// Values a draw could meet are read by the key's schema row before any trial: a typo in the third
// choice fails at once, not when (if ever) a trial draws it.
TEST_CASE("a search space's values are values of their keys: choices, range ends, what uniform draws", "[sweep]") {
  TempDir dir;
  const std::string path = dir.write("space.yaml",
                                     "space:\n"
                                     "  precision: [fp32,\n"
                                     "              bf17]\n"
                                     "  optim.momentum: {uniform: [0.5, 1.5]}\n"
                                     "  train.epochs: {uniform: [1, 5]}\n"
                                     "  optim.betas: [[0.9, 0.999], [0.9, 0.95]]\n"
                                     "  train.seed: {int: [0, 9]}\n");
  const auto problems = problems_of(path);
  REQUIRE(problems.size() == 3);
  CHECK_THAT(problems[0], Catch::Contains(path + ":3: precision: 'bf17' is not one of") && Catch::Contains("did you mean 'bf16'?"));
  CHECK_THAT(problems[1], Catch::Contains(path + ":4: optim.momentum: must be in [0, 1], got 1.5"));
  CHECK_THAT(problems[2], Catch::Contains(path + ":5: train.epochs: draws values such as 2.48") &&
                              Catch::Contains("expected an integer") && Catch::Contains("int: [low, high]"));
}

TEST_CASE("a recipe's sweep: section is the space, with the recipe's lines, and training ignores it", "[sweep]") {
  TempDir dir;
  const std::string recipe = dir.write("r.yaml",
                                       "data: {train: /data/train.gz}\n"
                                       "train: {global_batch: 64}\n"
                                       "sweep:\n"
                                       "  space:\n"
                                       "    optim.lr: {loguniform: [1.0e-3, 0.3]}\n"
                                       "  trials: 5\n"
                                       "  early_stopping: {grace: 1, reduction: 2}\n");
  const SweepSpace s = load_recipe_sweep_section(recipe, recipe_keys());
  REQUIRE(s.dimensions.size() == 1);
  CHECK(s.trials == 5);
  CHECK(s.grace_epochs == 1);
  CHECK(s.file == recipe);
  // The section's text loads back as a space file: a restarted sweep compares it.
  CHECK(space_of(s.text).trials == 5);
  LoadOptions options;
  options.check_paths = false;
  CHECK(load_recipe(recipe, options).train.global_batch == 64);  // trials train the rest of the file
  const std::string bad = dir.write("bad.yaml", "train: {global_batch: 64}\nsweep:\n  space: {optim.lrr: [0.1]}\n");
  try {
    load_recipe_sweep_section(bad, recipe_keys());
    FAIL("expected a RecipeError");
  } catch (const RecipeError& e) {
    CHECK_THAT(e.problems().at(0), Catch::Contains(bad + ":3: optim.lrr: not a recipe key (did you mean 'optim.lr'?)"));
  }
  CHECK_THROWS_WITH(load_recipe_sweep_section(dir.write("plain.yaml", kPlainRecipe), recipe_keys()),
                    Catch::Contains("plain.yaml: the recipe has no sweep: section"));
  CHECK_FALSE(recipe_sweep_section(dir.file("plain.yaml"), recipe_keys()));
  CHECK(describe_space(s) == "random over optim.lr, 5 trials, 1 at a time, top1 (max), ASHA from epoch 1 by 2");
}

TEST_CASE("a recipe inherits its base's sweep: section whole, unless it has its own", "[sweep]") {
  TempDir dir;
  dir.write("base.yaml", "train: {global_batch: 64}\nsweep:\n  space: {optim.lr: [0.1, 0.2]}\n  trials: 2\n");
  const std::string child = dir.write("sub/child.yaml", "base: ../base.yaml\noptim: {lr: 0.05}\n");
  const auto inherited = recipe_sweep_section(child, recipe_keys());
  REQUIRE(inherited);
  CHECK(inherited->dimensions.at(0).key == "optim.lr");
  CHECK(inherited->file == dir.file("sub/../base.yaml"));  // messages point at the file that holds it
  const std::string own = dir.write("own.yaml", "base: base.yaml\nsweep:\n  space: {optim.momentum: [0.8, 0.9]}\n");
  const auto replaced = recipe_sweep_section(own, recipe_keys());
  REQUIRE(replaced->dimensions.size() == 1);  // the child's space replaces the base's, not merged with it
  CHECK(replaced->dimensions.at(0).key == "optim.momentum");
  const std::string loop = dir.write("loop.yaml", "base: loop.yaml\n");
  CHECK_FALSE(recipe_sweep_section(loop, recipe_keys()));  // a cycle ends (loading the recipe names it)
}

TEST_CASE("sweep.KEY=VALUE overrides set the space's keys, name themselves in errors, or give the whole space", "[sweep]") {
  TempDir dir;
  const std::string recipe = dir.write("r.yaml",
                                       "train: {global_batch: 64}\n"
                                       "sweep:\n"
                                       "  space: {optim.lr: [0.1, 0.2]}\n"
                                       "  trials: 2\n");
  const SweepSpace s = load_recipe_sweep_section(
      recipe, recipe_keys(),
      {"sweep.trials=1", "sweep.space.optim.momentum=[0.8,0.9]", "sweep.early_stopping.grace=1", "sweep.sampler=tpe"});
  CHECK(s.trials == 1);
  CHECK(s.sampler == SweepSampler::kTpe);
  CHECK(s.grace_epochs == 1);
  REQUIRE(s.dimensions.size() == 2);
  CHECK(s.dimensions.at(1).key == "optim.momentum");
  CHECK(s.dimensions.at(1).choices == std::vector<std::string>{"0.8", "0.9"});
  CHECK(space_of(s.text).dimensions.size() == 2);                       // what a restart compares holds the overrides
  CHECK(load_recipe_sweep_section(recipe, recipe_keys()).trials == 2);  // the file is not changed
  try {
    load_recipe_sweep_section(recipe, recipe_keys(), {"sweep.parallel=0", "sweep.space.optim.lrr=[1]"});
    FAIL("expected a RecipeError");
  } catch (const RecipeError& e) {
    REQUIRE(e.problems().size() == 2);
    CHECK_THAT(
        e.problems(),
        Catch::VectorContains(std::string("override 'sweep.space.optim.lrr=[1]': optim.lrr: not a recipe key (did you mean 'optim.lr'?)")));
    CHECK_THAT(e.problems(), Catch::VectorContains(std::string("override 'sweep.parallel=0': parallel: must be at least 1, got 0")));
  }
  CHECK_THROWS_WITH(load_recipe_sweep_section(recipe, recipe_keys(), {"sweep.trials"}),
                    Catch::Contains("override 'sweep.trials': expected sweep.KEY=VALUE"));
  // No sweep: section at all: the overrides are the space.
  const SweepSpace only = load_recipe_sweep_section(dir.write("plain.yaml", kPlainRecipe), recipe_keys(),
                                                    {"sweep.space.optim.lr=[0.05,0.1,0.2]", "sweep.sampler=grid", "sweep.trials=0"});
  CHECK(grid_assignments(only).size() == 3);
  CHECK(describe_space(only) == "grid over optim.lr, the whole grid, 1 at a time, top1 (max)");
}

TEST_CASE("the grid is every combination, and random draws are seeded, within the ranges, whole for int", "[sweep]") {
  const SweepSpace grid = space_of("space: {optim.lr: {grid: [0.1, 0.2, 0.4]}, model.arch: [resnet18, resnet34]}\nsampler: grid\ntrials: 0\n");
  const std::vector<Assignment> all = grid_assignments(grid);
  REQUIRE(all.size() == 6);
  CHECK(overrides_of(all[0]) == std::vector<std::string>{"optim.lr=0.1", "model.arch=resnet18"});
  CHECK(overrides_of(all[5]) == std::vector<std::string>{"optim.lr=0.4", "model.arch=resnet34"});
  const SweepSpace random = space_of("space: {optim.lr: {loguniform: [1.0e-4, 1.0e-1]}, train.micro_batch: {int: [16, 19]}}\nseed: 3\n");
  std::set<std::string> sizes;
  for (int64_t i = 0; i < 200; ++i) {
    const Assignment a = random_assignment(random, i);
    CHECK(a == random_assignment(random, i));  // a pure function of the seed and the trial
    const double lr = std::stod(a[0].second);
    CHECK((lr >= 1e-4 && lr <= 1e-1));
    sizes.insert(a[1].second);
  }
  CHECK(sizes == std::set<std::string>{"16", "17", "18", "19"});
  SweepSpace other = random;
  other.seed = 4;
  CHECK(random_assignment(other, 0) != random_assignment(random, 0));
}

TEST_CASE("random and TPE trials never repeat another's values, and a small space caps the trials", "[sweep]") {
  const SweepSpace small = space_of("space: {optim.lr: [0.1, 0.2], train.micro_batch: {int: [16, 17]}}\ntrials: 12\n");
  CHECK(distinct_assignments(small) == 4u);
  const std::vector<Assignment> drawn = random_assignments(small, 12);
  CHECK(drawn.size() == 4);
  CHECK(std::set<Assignment>(drawn.begin(), drawn.end()).size() == 4);
  CHECK(random_assignments(small, 3) == std::vector<Assignment>(drawn.begin(), drawn.begin() + 3));  // the same prefix
  // A continuous space draws as before: trial i is draw i.
  const SweepSpace wide = space_of("space: {optim.lr: {loguniform: [1.0e-4, 1.0e-1]}, model.arch: [a, b]}\n");
  CHECK_FALSE(distinct_assignments(wide));
  const std::vector<Assignment> wide_drawn = random_assignments(wide, 20);
  REQUIRE(wide_drawn.size() == 20);
  for (int64_t i = 0; i < 20; ++i) CHECK(wide_drawn[static_cast<size_t>(i)] == random_assignment(wide, i));
  // TPE that would propose a taken assignment proposes another, and none when all are taken.
  SweepSpace tpe = space_of("space: {model.arch: [a, b, c]}\nsampler: tpe\n");
  std::vector<ScoredTrial> history;
  for (int i = 0; i < 6; ++i) history.push_back(ScoredTrial{{{"model.arch", i < 3 ? "a" : "b"}}, i < 3 ? 0.9 : 0.1});
  const std::vector<Assignment> a_and_b{{{"model.arch", "a"}}, {{"model.arch", "b"}}};
  for (int64_t i = 0; i < 10; ++i) CHECK(untaken_tpe_assignment(tpe, i, history, a_and_b) == Assignment{{"model.arch", "c"}});
  std::vector<Assignment> every = a_and_b;
  every.push_back({{"model.arch", "c"}});
  CHECK_FALSE(untaken_tpe_assignment(tpe, 0, history, every));
}

// A synthetic objective with its best at lr 1e-2, weight decay 0.3 and the third choice.
double objective(const Assignment& a) {
  const double lr = std::stod(a[0].second), wd = std::stod(a[1].second);
  return -std::pow(std::log10(lr) + 2.0, 2) - 4 * std::pow(wd - 0.3, 2) - (a[2].second == "c" ? 0.0 : 0.5);
}

TEST_CASE("TPE finds better values than random search with the same budget, over several seeds", "[sweep]") {
  double tpe_total = 0, random_total = 0;
  int tpe_wins = 0;
  constexpr int kSeeds = 10, kBudget = 30;
  for (int seed = 0; seed < kSeeds; ++seed) {
    SweepSpace s = space_of("space: {optim.lr: {loguniform: [1.0e-5, 1.0]}, optim.weight_decay: {uniform: [0, 1]}, model.arch: [a, b, c, d]}\n"
                            "sampler: tpe\n");
    s.seed = static_cast<uint64_t>(seed);
    std::vector<ScoredTrial> history;
    double best_tpe = -1e9, best_random = -1e9;
    for (int64_t i = 0; i < kBudget; ++i) {
      const Assignment a = tpe_assignment(s, i, history);
      history.push_back(ScoredTrial{a, objective(a)});
      best_tpe = std::max(best_tpe, objective(a));
      best_random = std::max(best_random, objective(random_assignment(s, i + 1000)));
    }
    tpe_total += best_tpe;
    random_total += best_random;
    tpe_wins += best_tpe > best_random;
  }
  INFO("mean best: TPE " << tpe_total / kSeeds << ", random " << random_total / kSeeds << "; TPE better on " << tpe_wins << " of " << kSeeds);
  CHECK(tpe_total / kSeeds > random_total / kSeeds);
  CHECK(tpe_wins >= 7);
}

TEST_CASE("TPE ranks trials that went further above pruned ones, whatever their early scores", "[sweep]") {
  SweepSpace s = space_of("space: {model.arch: [a, b]}\nsampler: tpe\n");
  // Six finished trials of `a` scoring 0.5; six of `b` pruned at the first rung with a higher early
  // score. The good quarter is taken from the finished ones, so TPE proposes `a`.
  std::vector<ScoredTrial> history;
  for (int i = 0; i < 6; ++i) history.push_back(ScoredTrial{{{"model.arch", "a"}}, 0.5, 2});
  for (int i = 0; i < 6; ++i) history.push_back(ScoredTrial{{{"model.arch", "b"}}, 0.9, 1});
  int a = 0;
  for (int64_t i = 0; i < 40; ++i) a += tpe_assignment(s, 100 + i, history)[0].second == "a";
  CHECK(a >= 30);
  // With every trial at the same progress the early scores decide, and TPE proposes `b`.
  for (ScoredTrial& t : history) t.progress = 2;
  int b = 0;
  for (int64_t i = 0; i < 40; ++i) b += tpe_assignment(s, 100 + i, history)[0].second == "b";
  CHECK(b >= 30);
}

TEST_CASE("ASHA's rungs grow by the reduction factor up to train.epochs, and only the best 1/reduction go on", "[sweep]") {
  CHECK(rung_epochs(1, 2, 4) == std::vector<int64_t>{1, 2, 4});
  CHECK(rung_epochs(1, 3, 10) == std::vector<int64_t>{1, 3, 9, 10});
  CHECK(rung_epochs(0, 3, 10) == std::vector<int64_t>{10});  // no early stopping
  CHECK(rung_epochs(5, 2, 4) == std::vector<int64_t>{4});
  const std::vector<double> results{0.1, 0.5, 0.3, 0.9};
  CHECK(promotable(results, 0.9, 2, true));
  CHECK(promotable(results, 0.5, 2, true));
  CHECK_FALSE(promotable(results, 0.3, 2, true));
  CHECK(promotable(results, 0.1, 2, false));  // a loss: the smallest are the best
  CHECK_FALSE(promotable({0.7}, 0.7, 2, true));  // one result: nobody is in the best half yet
  CHECK_FALSE(promotable({0.7, std::nan("")}, std::nan(""), 2, true));
  const SweepSpace s = space_of("space: {optim.lr: [0.1]}\nearly_stopping: {grace: 1, reduction: 2}\n");
  CHECK(s.grace_epochs == 1);
  CHECK(s.reduction == 2);
  TempDir dir;
  const auto problems = problems_of(dir.write("bad.yaml", "space: {optim.lr: [0.1]}\nearly_stopping: {grace: 0, reduction: 1, rungs: 3}\n"));
  REQUIRE(problems.size() == 3);
  CHECK_THAT(problems[0], Catch::Contains("early_stopping.grace: must be at least 1 epoch, got 0"));
  CHECK_THAT(problems[1], Catch::Contains("early_stopping.reduction: must be at least 2, got 1"));
  CHECK_THAT(problems[2], Catch::Contains("early_stopping.rungs: not a key of early_stopping"));
}
