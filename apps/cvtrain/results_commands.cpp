// The commands about runs as a whole: `cvtrain report` (a run's or a sweep's HTML page), `cvtrain track`
// (a run or sweep sent to MLflow afterwards) and `cvtrain sweep`.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "command.h"
#include "cvtrain/core/cpu_budget.h"
#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/launch/rank_environment.h"
#include "cvtrain/launch/slurm_steps.h"
#include "cvtrain/observe/device_info.h"
#include "cvtrain/observe/provenance.h"
#include "cvtrain/observe/run_history.h"
#include "cvtrain/observe/run_report.h"
#include "cvtrain/recipe/sweep_space.h"
#include "cvtrain/sweep/sweep_report.h"
#include "cvtrain/sweep/sweep_runner.h"
#include "cvtrain/tools/tracking_replay.h"
#include "cvtrain/train/run_directory.h"

namespace cvtrain::cli {
namespace {

struct ReportArgs {
  std::string run, out;
};

std::string report_file(const ReportArgs& args) {
  return args.out.empty() ? (std::filesystem::path(args.run) / "report.html").string() : args.out;
}

int run_sweep_report(const ReportArgs& args) {
  const SweepHistory sweep = read_sweep_history(args.run);
  const std::string out = report_file(args);
  write_file_atomically(out, sweep_report_html(sweep, utc_now()));
  for (const std::string& note : sweep.notes) log::info("{}", note);
  log::info("report of sweep {} ({} trials{}) written to {}", args.run, sweep.trials.size(),
            sweep.best_trial.empty() ? "" : ", best " + sweep.best_trial, out);
  return 0;
}

int run_report(const ReportArgs& args) {
  if (is_sweep_folder(args.run)) return run_sweep_report(args);
  const RunHistory history = read_run_history(args.run);
  const std::string out = report_file(args);
  write_file_atomically(out, run_report_html(history, utc_now()));
  for (const std::string& note : history.notes) log::info("{}", note);
  log::info("report of {} ({} metrics lines, {} epochs) written to {}", args.run, history.intervals.size(), history.epochs.size(), out);
  const std::vector<FailureRecord> failed = failures_of_latest_start(history);
  if (!failed.empty())
    log::warn("{} failed: {} on {} at {}: {}", args.run, failed.front().who, failed.front().host, failed.front().time, failed.front().message);
  return 0;
}

Command add_report_command(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  auto* cmd = app.add_subcommand(
      "report", "Write one self-contained HTML page of a run folder (no network needed to view it): key figures, the\n"
                "profiler's verdicts, loss and accuracy, throughput, the step-time breakdown, per-rank step times, memory,\n"
                "the resolved recipe and provenance. Works on a run still going (from what it has written so far). Given a sweep's\n"
                "folder: every trial's learning curve, the metric against each searched key, the trials best first and the\n"
                "best trial's recipe");
  cmd->add_option("run", args->run, "A run folder (the recipe's `output`) or a sweep folder (it holds sweep.jsonl)")->required();
  cmd->add_option("--out,-o", args->out, "The HTML file (default: RUN/report.html)");
  return {cmd, [args] { return run_report(*args); }};
}

struct TrackArgs {
  std::string run;
  ReplayOptions options;
};

int run_track(const TrackArgs& args) {
  const ReplayResult result = replay_to_mlflow(args.run, args.options);
  if (result.delivered == result.runs) {
    log::info("{}: {} MLflow run{} complete", args.run, result.runs, result.runs == 1 ? "" : "s");
    return 0;
  }
  log::error("{}: {} of {} MLflow runs complete; run `cvtrain track {}` again once the server answers (nothing is sent twice)", args.run,
             result.delivered, result.runs, args.run);
  return kExitRuntimeError;
}

Command add_track_command(CLI::App& app) {
  auto args = std::make_shared<TrackArgs>();
  auto* cmd = app.add_subcommand(
      "track",
      "Send a run folder to an MLflow tracking server after the fact: a run trained without tracking, or one whose\n"
      "server was down or slow. The recipe as params, every metrics.jsonl value with its step, the tags, the end status\n"
      "and the artifacts, into the run the folder's mlflow_run.json names (created when it names none). Run it twice\n"
      "and nothing is sent twice. Given a sweep's folder: the sweep as the parent run, each trial as its child");
  cmd->add_option("run", args->run, "A run folder (the recipe's `output`) or a sweep folder (it holds sweep.jsonl)")->required();
  cmd->add_option("--uri", args->options.uri, "The server, http(s)://HOST:PORT (default: track.mlflow.uri, else MLFLOW_TRACKING_URI)");
  cmd->add_option(
      "--experiment", args->options.experiment,
      "The experiment of a run not yet in MLflow (default: track.mlflow.experiment, else MLFLOW_EXPERIMENT_NAME, else Default)");
  return {cmd, [args] { return run_track(*args); }};
}

struct SweepArgs {
  RecipeArgs recipe;
  std::string space, out;
  std::string launcher = "auto";
};

void log_sweep_summary(const SweepSummary& summary) {
  log::info("{}: {} trial(s) done, {} failed, {} to continue; results in {}/results.md{}", summary.folder, summary.done, summary.failed,
            summary.stopped, summary.folder,
            summary.best_trial.empty() ? "" : fmt::format("; best: {} ({:.4f})", summary.best_trial, *summary.best_metric));
  if (summary.stopped_early > 0)
    log::info("early stopping: {} of {} trials stopped early; {} epochs trained of the {} that running every one to the end "
              "takes ({:.0f}% saved)",
              summary.stopped_early, summary.started, summary.epochs_trained, summary.epochs_without_stopping,
              100.0 * (1.0 - static_cast<double>(summary.epochs_trained) / static_cast<double>(summary.epochs_without_stopping)));
}

// Every trial an ordinary cvtrain run of this executable, a few at a time.
int run_sweep_command(const SweepArgs& args) {
  SweepOptions options;
  options.recipe = args.recipe.recipe;
  for (const std::string& o : args.recipe.overrides) (is_sweep_override(o) ? options.space_overrides : options.overrides).push_back(o);
  options.space_file = args.space;
  options.folder = args.out;
  options.executable = own_executable();
  options.visible_gpus = visible_cuda_devices();
  options.cores = usable_cpus();
  if (args.launcher != "local") {
    options.slurm = slurm_allocation(process_environment());
    if (args.launcher == "srun" && !options.slurm)
      throw Error("--launcher srun: this process is not in a Slurm allocation (run the sweep from an sbatch script or salloc)");
  }
  const SweepSummary summary = run_sweep(options);
  std::printf("%s", summary.table.c_str());
  log_sweep_summary(summary);
  if (summary.stopped == 0) return 0;
  log::info("the sweep stopped before every trial finished; run the same command again to continue it");
  return kExitPreempted;
}

Command add_sweep_command(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  auto* cmd = app.add_subcommand(
      "sweep",
      "Hyperparameter search: trials of the recipe with values from a search space (--space FILE or the recipe's sweep:\n"
      "section; grid, random or tpe, optionally ASHA early stopping), each an ordinary run folder under the sweep's folder,\n"
      "`parallel` at a time on this machine's GPUs (gpus_per_trial each) or cores, or inside a Slurm allocation as one\n"
      "srun job step per trial. Every candidate recipe is checked first. Started again, a sweep reruns no finished trial\n"
      "and resumes the interrupted ones. Writes SWEEP/sweep.jsonl, SWEEP/results.md (best first) and SWEEP/best_recipe.yaml;\n"
      "`cvtrain report SWEEP` draws it. sweep.KEY=VALUE overrides set the space's keys (the space itself without a file or\n"
      "section); the other KEY=VALUE overrides go to every trial.\n"
      "  cvtrain sweep --recipe recipes/quickstart.yaml 'sweep.space.optim.lr=[0.05,0.1,0.2]' sweep.sampler=grid sweep.trials=0");
  add_recipe_args(*cmd, args->recipe, true);
  cmd->add_option("--space,-s", args->space, "The search space YAML file (see docs/sweeps.md); default: the recipe's sweep: section")
      ->check(CLI::ExistingFile);
  cmd->add_option("--out,-o", args->out, "The sweep's folder (default: the recipe's output + _sweep)");
  cmd->add_option("--launcher", args->launcher, "How trials start: local (this machine's GPUs or cores), srun (one job step "
                                                "each inside this Slurm allocation), auto (srun inside an allocation)")
      ->check(CLI::IsMember({"auto", "local", "srun"}))
      ->capture_default_str();
  return {cmd, [args] { return run_sweep_command(*args); }};
}

}  // namespace

std::vector<Command> add_results_commands(CLI::App& app) {
  return {add_report_command(app), add_track_command(app), add_sweep_command(app)};
}

}  // namespace cvtrain::cli
