// The commands that run a recipe's ranks: train (also the top level), check, models, launch and
// preflight.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>

#include "command.h"
#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/launch/job.h"
#include "cvtrain/launch/rank_environment.h"
#include "cvtrain/models/arch_traits.h"
#include "cvtrain/observe/device_info.h"
#include "cvtrain/observe/metric_records.h"
#include "cvtrain/optim/lr_schedule.h"
#include "cvtrain/recipe/batch_plan.h"
#include "cvtrain/recipe/recipe_checks.h"
#include "cvtrain/recipe/recipe_schema.h"
#include "cvtrain/recipe/run_plan.h"
#include "cvtrain/recipe/sweep_space.h"
#include "cvtrain/tools/preflight.h"
#include "cvtrain/train/run_builder.h"
#include "cvtrain/train/run_data.h"
#include "cvtrain/train/trainer.h"

namespace cvtrain::cli {
namespace {

int run_train(const RecipeArgs& args, int argc, char** argv) {
  return as_rank_or_launcher(args, argc, argv, [](const Recipe& recipe, const std::optional<RankInfo>& rank) {
    // preflight: true measures the built model before the strategy takes it over (tools/preflight.h).
    std::function<void(PreflightParts&)> preflight;
    if (recipe.preflight) preflight = [&recipe](PreflightParts& run) { run_preflight(run, recipe); };
    const TrainSummary summary = train(recipe, rank_of_process(rank, recipe.distributed), preflight);
    if (!summary.scores.empty() && (!rank || rank->rank == 0))
      std::printf("final %s after %lld steps\n", scores_text(summary.scores).c_str(), static_cast<long long>(summary.steps));
    return 0;
  });
}

// `cvtrain train`, and the top level (`cvtrain --recipe R`), which without a recipe prints the help.
std::vector<Command> add_train_commands(CLI::App& app, int argc, char** argv) {
  auto top = std::make_shared<RecipeArgs>();
  add_recipe_args(app, *top, false);
  auto args = std::make_shared<RecipeArgs>();
  auto* cmd = app.add_subcommand("train", "Train as the recipe says (the default when no subcommand is given)");
  add_recipe_args(*cmd, *args, true);
  const auto run_top = [&app, top, argc, argv] {
    if (!top->recipe.empty()) return run_train(*top, argc, argv);
    for (const std::string& word : top->overrides) {  // `cvtrain r.yaml`: a recipe without its flag
      const std::string extension = std::filesystem::path(word).extension().string();
      if (word.find('=') == std::string::npos && (extension == ".yaml" || extension == ".yml")) {
        std::cerr << "cvtrain: '" << word << "' is a recipe given without --recipe: cvtrain --recipe " << word << "\n";
        return kExitRecipeError;
      }
    }
    std::cerr << app.help();
    return kExitRecipeError;
  };
  return {{cmd, [args, argc, argv] { return run_train(*args, argc, argv); }}, {nullptr, run_top}};
}

// The data opened as training opens it (class folders, shard indexes, IDX files; every refusal a
// recipe error, as at the start of training), summed up in comment lines.
std::string data_check_lines(const Recipe& recipe) {
  const RunData data = open_run_data(recipe);
  std::string lines = fmt::format("# data: data.train {} samples, {} classes", data.train->size(), data.train->num_classes());
  if (data.val) lines += fmt::format("; data.val {} samples", data.val->size());
  const RunLength length = RunLength::of(data.train->size(), recipe.train);
  const LrSchedule schedule(recipe.schedule, recipe.optim.lr, length.steps_per_epoch, length.total_steps);
  lines += fmt::format(
      "\n# steps: {} an epoch, {} in all, warmup {}; learning rate {:.4g} at step 1, {:.4g} after warmup, {:.4g} at the last\n",
      length.steps_per_epoch, length.total_steps, std::min(schedule.warmup_steps(), length.total_steps), schedule.at(0),
      schedule.at(std::min(schedule.warmup_steps(), length.total_steps - 1)), schedule.at(std::max<int64_t>(0, length.total_steps - 1)));
  for (const std::string& note : data.notes) lines += "# note: " + note + "\n";
  for (const std::string& warning : data_warnings(data, recipe)) lines += "# warning: " + warning + "\n";
  return lines;
}

// The run plan: what the recipe alone decides, and on the machine that runs the job (not a login
// node's --no-paths check) the device and decode threads its ranks would get here.
std::string plan_lines(const Recipe& recipe, bool on_this_machine) {
  RunPlan plan = RunPlan::of(recipe, world_size(recipe));
  if (on_this_machine) {
    const int local_ranks = std::max<int>(1, plan.batch.world / static_cast<int>(std::max<int64_t>(1, recipe.distributed.nnodes)));
    const bool on_gpu = recipe.device != DeviceKind::kCpu && visible_cuda_devices() > 0;
    plan.device = on_gpu ? "cuda" : "cpu";
    plan.workers = worker_threads(recipe.data.workers, local_ranks, on_gpu);
  }
  std::string lines = "# plan (what the recipe resolves to; provenance.json keeps a run's):\n";
  for (const auto& [name, value] : plan.rows()) lines += "#   " + name + ": " + value + "\n";
  return lines;
}

// `# left for the job's start:` and one commented line for each check only its machine can make.
std::string left_for_the_job_lines(const Recipe& recipe) {
  const std::vector<std::string> left = checks_left_for_the_job(recipe);
  if (left.empty()) return "";  // device: cpu with a fixed rank count and workers: nothing the machine decides
  std::string lines = "# left for the job's start (facts of the machine that runs it):\n";
  for (const std::string& check : left) lines += "#   " + check + "\n";
  return lines;
}

int run_check(RecipeArgs args) {
  args.check_machine = args.check_paths;  // --no-paths: a login node checking for the machine that runs the job
  const Recipe recipe = load(args);
  // A sweep: section is checked too (its keys and ranges; `cvtrain sweep` checks each trial's recipe).
  const auto space = recipe_sweep_section(args.recipe, recipe_keys());
  const bool open_data = args.check_paths && recipe.data.format != DataFormat::kSynthetic;
  const std::string data_lines = open_data ? data_check_lines(recipe) : "";  // before any output: a refusal prints nothing else
  std::cout << "# recipe: " << args.recipe << " (as written: inheritance and overrides applied, the batch triple completed)\n"
            << plan_lines(recipe, args.check_paths)
            << (args.check_paths ? "" : "# data and pretrained paths not checked (--no-paths)\n" + left_for_the_job_lines(recipe));
  if (space) std::cout << "# sweep: " << describe_space(*space) << "; run it with cvtrain sweep --recipe " << args.recipe << "\n";
  for (const std::string& warning : recipe_warnings(recipe)) std::cout << "# warning: " << warning << "\n";
  std::cout << data_lines;
  std::cout << recipe_to_yaml(recipe);
  return 0;
}

Command add_check_command(CLI::App& app) {
  auto args = std::make_shared<RecipeArgs>();
  auto keys = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("check",
                                 "Validate a recipe; print the plan it resolves to and the recipe (inheritance, overrides, derived batch)");
  add_recipe_args(*cmd, *args, false);
  cmd->add_flag("--keys", *keys, "Print every recipe key, one a line, and nothing else (no recipe needed; docs/recipes.md documents each)");
  cmd->add_flag("--no-paths{false}", args->check_paths,
                "Check keys and values only, for a job that runs on another machine (a login node, CI): do not open the\n"
                "data (class folders, shard indexes, IDX files, as training opens them) nor look for the pretrained file,\n"
                "and leave what needs that machine (its GPUs and their count, nvJPEG, NCCL, its cores) for the job's\n"
                "start, listing each");
  return {cmd, [args, keys] {
            if (*keys) {
              for (const std::string& key : recipe_keys()) std::cout << key << "\n";
              return 0;
            }
            if (args->recipe.empty()) throw RecipeError({"cvtrain check: --recipe FILE is required (or --keys)"});
            return run_check(*args);
          }};
}

Command add_models_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("models", "List the model architectures model.arch accepts: whose weight names each uses, its switches");
  auto names_only = std::make_shared<bool>(false);
  cmd->add_flag("--names", *names_only, "Only the names, one a line (for scripts)");
  return {cmd, [names_only] {
            if (*names_only) {
              for (const auto& name : model_names()) std::cout << name << "\n";
            } else {
              std::cout << architecture_table();
            }
            return 0;
          }};
}

struct LaunchArgs {
  LaunchPlan plan;
  double grace_s = 10;
  std::vector<std::string> command;
};

Command add_launch_command(CLI::App& app) {
  auto args = std::make_shared<LaunchArgs>();
  auto* cmd = app.add_subcommand(
      "launch",
      "Run PROGRAM once per rank with torchrun's variables (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,\n"
      "GROUP_RANK, MASTER_ADDR, MASTER_PORT), output prefixed by rank, signals forwarded; on the first failure\n"
      "the other ranks are stopped and the job exits with the failed rank's code.\n"
      "  cvtrain launch --nproc-per-node 4 -- ./my_rank_program --flag");
  cmd->add_option("--nproc-per-node", args->plan.nproc_per_node, "Ranks on this node")->check(CLI::Range(1, 4096))->capture_default_str();
  cmd->add_option("--nnodes", args->plan.nnodes, "Nodes in the job")->check(CLI::Range(1, 100000))->capture_default_str();
  cmd->add_option("--node-rank", args->plan.node_rank, "This node's index, 0 to nnodes-1")->capture_default_str();
  cmd->add_option("--master-addr", args->plan.master_addr, "Host of rank 0")->capture_default_str();
  cmd->add_option("--master-port", args->plan.master_port, "Rendezvous port on the master")->check(CLI::Range(1, 65535))->capture_default_str();
  cmd->add_option("--grace-s", args->grace_s, "Seconds between SIGTERM and SIGKILL when stopping ranks")->capture_default_str();
  cmd->add_option("command", args->command, "PROGRAM [ARGS...], after --")->required();
  return {cmd, [args] {
            SupervisorOptions options;
            options.grace_s = args->grace_s;
            return run_group(args->plan, args->command, options);
          }};
}

// The job's ranks, launched as training would launch them, measure and stop.
int run_preflight_only(const RecipeArgs& args, int argc, char** argv) {
  return as_rank_or_launcher(args, argc, argv, [](const Recipe& recipe, const std::optional<RankInfo>& rank) {
    PreflightParts run = build_preflight_parts(recipe, rank_of_process(rank, recipe.distributed));
    run_preflight(run, recipe);
    return 0;
  });
}

Command add_preflight_command(CLI::App& app, int argc, char** argv) {
  auto args = std::make_shared<RecipeArgs>();
  auto* cmd = app.add_subcommand(
      "preflight", "Run the recipe's ranks for a few seconds without training: each rank's matrix-product rate, host-to-device\n"
                   "bandwidth (CUDA), its input pipeline against what its model consumes, and the all-reduce bus bandwidth;\n"
                   "names the rank, link or pipeline that would hold the job back. Writes OUTPUT/preflight.json");
  add_recipe_args(*cmd, *args, true);
  return {cmd, [args, argc, argv] { return run_preflight_only(*args, argc, argv); }};
}

}  // namespace

std::vector<Command> add_training_commands(CLI::App& app, int argc, char** argv) {
  std::vector<Command> commands = add_train_commands(app, argc, argv);
  commands.push_back(add_check_command(app));
  commands.push_back(add_models_command(app));
  commands.push_back(add_launch_command(app));
  commands.push_back(add_preflight_command(app, argc, argv));
  return commands;
}

}  // namespace cvtrain::cli
