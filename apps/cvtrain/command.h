// What every subcommand shares: how it is registered, the recipe arguments, and how a job's ranks start.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cvtrain/launch/rank_environment.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain::cli {

// A subcommand as registered: its CLI11 node (nullptr for the top level, which runs when no
// subcommand was given) and what runs when the command line chose it.
struct Command {
  CLI::App* cli = nullptr;
  std::function<int()> run;
};

struct RecipeArgs {
  std::string recipe;
  std::vector<std::string> overrides;
  bool check_paths = true;
  bool check_machine = true;  // false: the job runs elsewhere (check --no-paths), GPUs are checked at its start
};

void add_recipe_args(CLI::App& app, RecipeArgs& args, bool required);

// world_size 0 takes the job's size from the recipe (nnodes x nproc_per_node).
Recipe load(const RecipeArgs& args, int world_size = 0);
int world_size(const Recipe& recipe);

std::string own_executable();

// What one rank of a job does with the recipe; `rank` is unset for a job of one process started alone.
using RankWork = std::function<int(const Recipe& recipe, const std::optional<RankInfo>& rank)>;

// Under torchrun or srun this process is one rank and does `work`; started alone for a job of
// several ranks it launches them (itself once per local rank, supervised) and returns their code.
int as_rank_or_launcher(const RecipeArgs& args, int argc, char** argv, const RankWork& work);

// A number that may be 0 (CLI11's NonNegativeNumber spells out DBL_MAX when it refuses one).
const CLI::Validator& not_negative();

// Refuses an output file not named FILE.extension (lower case given), saying `what` it is.
CLI::Validator file_named(const std::string& extension, const std::string& what);

// train (also the top level), check, models, launch, preflight.
std::vector<Command> add_training_commands(CLI::App& app, int argc, char** argv);
// eval, export, predict.
std::vector<Command> add_weights_commands(CLI::App& app, int argc, char** argv);
// data pack, inspect, bench, preview.
std::vector<Command> add_data_commands(CLI::App& app);
// report, sweep.
std::vector<Command> add_results_commands(CLI::App& app);

}  // namespace cvtrain::cli
