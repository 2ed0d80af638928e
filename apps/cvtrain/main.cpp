// cvtrain's command line: CLI11 lives only in apps/. The subcommands are registered by
// training_commands.cpp, weights_commands.cpp, data_commands.cpp and results_commands.cpp; here the command line is parsed,
// the chosen one runs, and errors become exit codes (recipe mistakes 2, runtime failures 1, a stop 75).
#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "command.h"
#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/core/version.h"

namespace {

constexpr const char* kDescription =
    "cvtrain: distributed training of vision models from one YAML recipe.\n"
    "  cvtrain --recipe recipes/quickstart.yaml [KEY=VALUE ...]   train (same as `cvtrain train`)\n"
    "  cvtrain check --recipe FILE [--no-paths] [KEY=VALUE ...]  validate and print the resolved recipe\n"
    "  cvtrain models                                            list model architectures\n"
    "  cvtrain launch --nproc-per-node N -- PROGRAM [ARGS...]    run and supervise one process per rank\n"
    "  cvtrain data pack SRC DST | inspect PATH | bench PATH     dataset shards, contents and input-pipeline speed\n"
    "  cvtrain data preview --recipe FILE [--out grid.png]       training samples as the step receives them, as a PNG\n"
    "  cvtrain eval --checkpoint DIR | --weights F [--recipe FILE] top-1, top-5 and loss on data.val\n"
    "  cvtrain export CHECKPOINT --out FILE.safetensors          weights for torchvision / timm\n"
    "  cvtrain predict --checkpoint DIR IMAGE|FOLDER ...         each image's top classes and probabilities\n"
    "  cvtrain report RUN|SWEEP [--out FILE.html]                one HTML page: curves, step breakdown, ranks, verdicts\n"
    "  cvtrain track RUN|SWEEP [--uri URI]                       send a run or sweep to MLflow afterwards (idempotent)\n"
    "  cvtrain preflight --recipe FILE [KEY=VALUE ...]           measure ranks, links and input pipeline before training\n"
    "  cvtrain sweep --recipe FILE [--space S.yaml]              trials over a search space (grid, random, TPE; ASHA)\n"
    "Exit codes: 0 success, 1 runtime error, 2 recipe or usage error, 75 stopped by SIGTERM/SIGUSR1/SIGINT\n"
    "after saving a checkpoint (run again to resume).";

// The chosen subcommand, or the top level (training) when none was given.
const cvtrain::cli::Command& chosen(const std::vector<cvtrain::cli::Command>& commands) {
  const cvtrain::cli::Command* top = nullptr;
  for (const auto& command : commands) {
    if (command.cli && *command.cli) return command;
    if (!command.cli) top = &command;
  }
  return *top;
}

// Runs the command; what it throws becomes a logged message and an exit code.
int run_reporting_errors(const cvtrain::cli::Command& command) {
  try {
    return command.run();
  } catch (const cvtrain::RecipeError& e) {
    cvtrain::log::error("{}", e.what());
    return cvtrain::kExitRecipeError;
  } catch (const cvtrain::Stopped& e) {
    cvtrain::log::info("{}", e.what());
    return cvtrain::kExitPreempted;
  } catch (const cvtrain::Error& e) {
    cvtrain::log::error("{}", e.what());
    return cvtrain::kExitRuntimeError;
  } catch (const c10::Error& e) {
    cvtrain::log::error("{}", e.what_without_backtrace());
    return cvtrain::kExitRuntimeError;
  } catch (const std::exception& e) {
    cvtrain::log::error("{}", e.what());
    return cvtrain::kExitRuntimeError;
  }
}

// Overrides written as other tools' flags (`--optim.lr=0.2`, `--optim.lr 0.2`): the line that says
// how cvtrain spells them, after CLI11's "not expected".
void hint_dashed_overrides(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) continue;
    const auto equals = arg.find('=');
    const std::string key = arg.substr(2, equals == std::string::npos ? std::string::npos : equals - 2);
    if (key.find('.') == std::string::npos || key.find_first_of(" /") != std::string::npos) continue;
    const std::string value = equals != std::string::npos ? arg.substr(equals + 1) : i + 1 < argc ? argv[i + 1] : "VALUE";
    std::fprintf(stderr, "Recipe overrides take no dashes: write %s=%s\n", key.c_str(), value.c_str());
  }
}

int run_cli(int argc, char** argv) {
  CLI::App app{kDescription, "cvtrain"};
  app.set_version_flag("--version", std::string("cvtrain ") + cvtrain::kVersion);
  app.footer("Recipe keys and their defaults: docs/recipes.md; `cvtrain check` prints every key of a recipe. The manual: docs/.");
  std::vector<cvtrain::cli::Command> commands = cvtrain::cli::add_training_commands(app, argc, argv);
  for (auto added :
       {cvtrain::cli::add_weights_commands(app, argc, argv), cvtrain::cli::add_data_commands(app), cvtrain::cli::add_results_commands(app)})
    commands.insert(commands.end(), added.begin(), added.end());
  app.require_subcommand(0, 1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    if (code != 0) hint_dashed_overrides(argc, argv);
    return code == 0 ? 0 : cvtrain::kExitRecipeError;
  }
  return run_reporting_errors(chosen(commands));
}

}  // namespace

// Every file of a run is closed (and renamed into place) before run_cli returns, and no thread is
// left; what remains are libtorch's and CUDA's static destructors, which take a fifth of a second
// per process (every rank and the launcher) and do nothing a finished process needs.
int main(int argc, char** argv) {
  const int code = run_cli(argc, argv);
  std::fflush(nullptr);
  std::_Exit(code);
}
