// The pieces every subcommand shares: recipe arguments, loading, and starting a job's ranks.
#include "command.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>

#include "cvtrain/launch/job.h"
#include "cvtrain/models/arch_traits.h"
#include "cvtrain/observe/device_info.h"
#include "cvtrain/recipe/batch_plan.h"
#include "cvtrain/recipe/recipe_loader.h"

namespace cvtrain::cli {

namespace {

constexpr const char* kOverridesHelp =
    "KEY=VALUE overrides applied after the recipe, e.g. train.epochs=3 optim.lr=0.05 optim.betas=[0.9,0.95]";

}  // namespace

void add_recipe_args(CLI::App& app, RecipeArgs& args, bool required) {
  auto* option = app.add_option("--recipe,-r", args.recipe, "YAML recipe file")->check(CLI::ExistingFile);
  if (required) option->required();
  app.add_option("overrides", args.overrides, kOverridesHelp);
}

Recipe load(const RecipeArgs& args, int world_size) {
  LoadOptions options;
  options.overrides = args.overrides;
  options.check_model = recipe_model_problems;
  options.world_size = world_size;
  options.visible_gpus = args.check_machine ? visible_cuda_devices() : 0;  // another machine's count is unknown here
  options.check_paths = args.check_paths;
  options.check_machine = args.check_machine;
  return load_recipe(args.recipe, options);
}

int world_size(const Recipe& recipe) { return BatchPlan::of(recipe.train).world; }

std::string own_executable() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string("/proc/self/exe");
}

namespace {

int launch_ranks(const Recipe& recipe, int argc, char** argv) {
  std::vector<std::string> command{own_executable()};
  command.insert(command.end(), argv + 1, argv + argc);
  SupervisorOptions options;
  options.hang_timeout_s = recipe.distributed.hang_timeout_s;
  options.grace_s = recipe.distributed.stop_grace_s;
  options.run_folder = recipe.output;
  return run_with_restarts(launch_plan_of(recipe.distributed, world_size(recipe)), command, options,
                           static_cast<int>(recipe.distributed.max_restarts));
}

}  // namespace

int as_rank_or_launcher(const RecipeArgs& args, int argc, char** argv, const RankWork& work) {
  const std::optional<RankInfo> rank = rank_from_environment(process_environment());
  const Recipe recipe = load(args, rank ? rank->world_size : 0);
  if (!rank && world_size(recipe) > 1) return launch_ranks(recipe, argc, argv);
  return work(recipe, rank);
}

const CLI::Validator& not_negative() {
  static const CLI::Validator validator(
      [](std::string& text) {
        double value = 0;
        return CLI::detail::lexical_cast(text, value) && value >= 0 ? std::string() : "must be a number, 0 or more, got " + text;
      },
      "NUMBER >= 0", "NotNegative");
  return validator;
}

CLI::Validator file_named(const std::string& extension, const std::string& what) {
  return CLI::Validator(
      [extension, what](std::string& name) {
        const auto dot = name.rfind('.');
        std::string given = dot == std::string::npos ? "" : name.substr(dot);
        std::transform(given.begin(), given.end(), given.begin(), [](unsigned char c) { return std::tolower(c); });
        return given == extension ? std::string() : what + "; name it " + extension + ", got " + name;
      },
      "FILE" + extension, "FileNamed" + extension);
}

}  // namespace cvtrain::cli
