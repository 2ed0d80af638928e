// cvtrain's command line: CLI11 lives only here. Subcommands train (default), check, models,
// launch, data, eval, export, report, preflight and sweep; recipe mistakes exit 2, runtime failures exit 1.
#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>
#include <fmt/format.h>

#include <unistd.h>

#include <climits>
#include <filesystem>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "cvtrain/core/cpu_budget.h"
#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/core/timer.h"
#include "cvtrain/core/version.h"
#include "cvtrain/data/dataset.h"
#include "cvtrain/data/pipeline_bench.h"
#include "cvtrain/data/sample_pipeline.h"
#include "cvtrain/data/shard_dataset.h"
#include "cvtrain/data/shard_inspection.h"
#include "cvtrain/launch/job.h"
#include "cvtrain/launch/rank_environment.h"
#include "cvtrain/models/arch_traits.h"
#include "cvtrain/observe/progress.h"
#include "cvtrain/observe/provenance.h"
#include "cvtrain/observe/run_history.h"
#include "cvtrain/observe/run_report.h"
#include "cvtrain/recipe/batch_plan.h"
#include "cvtrain/recipe/recipe_loader.h"
#include "cvtrain/recipe/sweep_space.h"
#include "cvtrain/sweep/sweep_report.h"
#include "cvtrain/sweep/sweep_runner.h"
#include "cvtrain/train/export.h"
#include "cvtrain/train/preflight.h"
#include "cvtrain/train/run_builder.h"
#include "cvtrain/train/run_directory.h"
#include "cvtrain/train/sample_preview.h"
#include "cvtrain/train/trainer.h"
#include "cvtrain/train/weights_evaluation.h"

namespace {

constexpr const char* kOverridesHelp =
    "KEY=VALUE overrides applied after the recipe, e.g. train.epochs=3 optim.lr=0.05 optim.betas=[0.9,0.95]";

struct RecipeArgs {
  std::string recipe;
  std::vector<std::string> overrides;
  bool check_paths = true;
};

struct ExportArgs {
  std::string checkpoint, out, dtype = "keep";
  bool ema = false;
};

void add_recipe_args(CLI::App& app, RecipeArgs& args, bool required) {
  auto* option = app.add_option("--recipe,-r", args.recipe, "YAML recipe file")->check(CLI::ExistingFile);
  if (required) option->required();
  app.add_option("overrides", args.overrides, kOverridesHelp);
}

// world_size 0 takes the job's size from the recipe (nnodes x nproc_per_node).
cvtrain::Recipe load(const RecipeArgs& args, int world_size = 0) {
  cvtrain::LoadOptions options;
  options.overrides = args.overrides;
  options.check_model = cvtrain::model_problems;
  options.world_size = world_size;
  options.visible_gpus = cvtrain::visible_cuda_devices();
  options.check_paths = args.check_paths;
  return cvtrain::load_recipe(args.recipe, options);
}

int world_size(const cvtrain::Recipe& recipe) { return cvtrain::BatchPlan::of(recipe.train).world; }

int run_check(const RecipeArgs& args) {
  const cvtrain::Recipe recipe = load(args);
  // A sweep: section is checked too (its keys and ranges; `cvtrain sweep` checks each trial's recipe).
  const auto space = cvtrain::recipe_sweep_section(args.recipe, cvtrain::recipe_keys());
  std::cout << "# resolved recipe: " << args.recipe << "\n"
            << "# batch: global " << recipe.train.global_batch << " = micro " << recipe.train.micro_batch << " x accumulation "
            << recipe.train.accumulation << " x world size " << world_size(recipe) << "\n"
            << (args.check_paths ? "" : "# data and pretrained paths not checked (--no-paths)\n");
  if (space)
    std::cout << "# sweep: " << cvtrain::describe_space(*space) << "; run it with cvtrain sweep --recipe " << args.recipe << "\n";
  std::cout << cvtrain::recipe_to_yaml(recipe);
  return 0;
}

int run_export(const ExportArgs& args) {
  const cvtrain::ExportResult result = cvtrain::export_weights(args.checkpoint, args.out, args.dtype, args.ema);
  cvtrain::log::info("{}: {} tensors, {:.1f} M values of {}{} (step {}) written to {}", result.checkpoint, result.tensors,
                     static_cast<double>(result.values) / 1e6, result.arch, result.ema ? "'s weight average" : "", result.step, args.out);
  std::cout << cvtrain::loading_hint(result, args.out) << "\n";
  return 0;
}

std::string own_executable() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string("/proc/self/exe");
}

// cvtrain as the launcher of a job of several ranks: itself once per local rank, supervised.
int launch_ranks(const cvtrain::Recipe& recipe, int argc, char** argv) {
  std::vector<std::string> command{own_executable()};
  command.insert(command.end(), argv + 1, argv + argc);
  cvtrain::SupervisorOptions options;
  options.hang_timeout_s = recipe.distributed.hang_timeout_s;
  options.grace_s = recipe.distributed.stop_grace_s;
  return cvtrain::run_with_restarts(cvtrain::launch_plan_of(recipe.distributed, world_size(recipe)), command, options,
                                    static_cast<int>(recipe.distributed.max_restarts));
}

int run_train(const RecipeArgs& args, int argc, char** argv) {
  // Under torchrun or srun this process is one rank; otherwise it launches the job's ranks.
  std::optional<cvtrain::RankInfo> rank = cvtrain::rank_from_environment(cvtrain::process_environment());
  const cvtrain::Recipe recipe = load(args, rank ? rank->world_size : 0);
  if (!rank && world_size(recipe) > 1) return launch_ranks(recipe, argc, argv);
  const cvtrain::TrainSummary summary = cvtrain::train(recipe, cvtrain::rank_of_process(rank, recipe.distributed));
  if (summary.top1 >= 0 && (!rank || rank->rank == 0))
    std::printf("final top-1 %.4f top-5 %.4f after %lld steps\n", summary.top1, summary.top5, static_cast<long long>(summary.steps));
  return 0;
}

// `cvtrain preflight`: the job's ranks, launched as training would launch them, measure and stop.
int run_preflight_only(const RecipeArgs& args, int argc, char** argv) {
  std::optional<cvtrain::RankInfo> rank = cvtrain::rank_from_environment(cvtrain::process_environment());
  cvtrain::Recipe recipe = load(args, rank ? rank->world_size : 0);
  if (!rank && world_size(recipe) > 1) return launch_ranks(recipe, argc, argv);
  cvtrain::TrainingRun run = cvtrain::build_preflight_run(recipe, cvtrain::rank_of_process(rank, recipe.distributed));
  cvtrain::run_preflight(run, recipe);
  return 0;
}

struct EvalArgs {
  RecipeArgs recipe;
  cvtrain::EvalRequest request;
  std::string out;
};

// `cvtrain eval`: the job's ranks, launched as training would launch them, evaluate and stop; rank 0
// prints the figures and writes them as JSON.
int run_eval(const EvalArgs& args, int argc, char** argv) {
  std::optional<cvtrain::RankInfo> rank = cvtrain::rank_from_environment(cvtrain::process_environment());
  const cvtrain::Recipe recipe = load(args.recipe, rank ? rank->world_size : 0);
  if (!rank && world_size(recipe) > 1) return launch_ranks(recipe, argc, argv);
  const cvtrain::EvalReport report = cvtrain::evaluate_weights(recipe, cvtrain::rank_of_process(rank, recipe.distributed), args.request);
  if (rank && rank->rank != 0) return 0;
  const std::string out = args.out.empty() ? (std::filesystem::path(recipe.output) / "eval.json").string() : args.out;
  const std::filesystem::path folder = std::filesystem::path(out).parent_path();
  if (!folder.empty()) std::filesystem::create_directories(folder);
  cvtrain::write_file_atomically(out, cvtrain::eval_report_json(report, recipe));
  std::printf("%s\n", cvtrain::eval_report_line(report, recipe).c_str());
  cvtrain::log::info("written to {}", out);
  return 0;
}

struct SweepArgs {
  RecipeArgs recipe;
  std::string space, out;
  std::string launcher = "auto";
};

// `cvtrain sweep`: every trial an ordinary cvtrain run of this executable, a few at a time.
int run_sweep_command(const SweepArgs& args) {
  cvtrain::SweepOptions options;
  options.recipe = args.recipe.recipe;
  options.overrides = args.recipe.overrides;
  options.space_file = args.space;
  options.folder = args.out;
  options.executable = own_executable();
  options.visible_gpus = cvtrain::visible_cuda_devices();
  options.cores = cvtrain::usable_cpus();
  if (args.launcher != "local") {
    options.slurm = cvtrain::slurm_allocation(cvtrain::process_environment());
    if (args.launcher == "srun" && !options.slurm)
      throw cvtrain::Error("--launcher srun: this process is not in a Slurm allocation (run the sweep from an sbatch script or salloc)");
  }
  const cvtrain::SweepSummary summary = cvtrain::run_sweep(options);
  std::printf("%s", summary.table.c_str());
  cvtrain::log::info("{}: {} trial(s) done, {} failed, {} to continue; results in {}/results.md{}", summary.folder, summary.done,
                     summary.failed, summary.stopped, summary.folder,
                     summary.best_trial.empty() ? "" : fmt::format("; best: {} ({:.4f})", summary.best_trial, *summary.best_metric));
  if (summary.stopped_early > 0)
    cvtrain::log::info("early stopping: {} of {} trials stopped early; {} epochs trained of the {} that running every one to the end "
                       "takes ({:.0f}% saved)",
                       summary.stopped_early, summary.started, summary.epochs_trained, summary.epochs_without_stopping,
                       100.0 * (1.0 - static_cast<double>(summary.epochs_trained) / static_cast<double>(summary.epochs_without_stopping)));
  if (summary.stopped == 0) return 0;
  cvtrain::log::info("the sweep stopped before every trial finished; run the same command again to continue it");
  return cvtrain::kExitPreempted;
}

struct LaunchArgs {
  cvtrain::LaunchPlan plan;
  double grace_s = 10;
  std::vector<std::string> command;
};

void add_launch_args(CLI::App& app, LaunchArgs& args) {
  app.add_option("--nproc-per-node", args.plan.nproc_per_node, "Ranks on this node")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--nnodes", args.plan.nnodes, "Nodes in the job")->check(CLI::Range(1, 100000))->capture_default_str();
  app.add_option("--node-rank", args.plan.node_rank, "This node's index, 0 to nnodes-1")->capture_default_str();
  app.add_option("--master-addr", args.plan.master_addr, "Host of rank 0")->capture_default_str();
  app.add_option("--master-port", args.plan.master_port, "Rendezvous port on the master")->check(CLI::Range(1, 65535))->capture_default_str();
  app.add_option("--grace-s", args.grace_s, "Seconds between SIGTERM and SIGKILL when stopping ranks")->capture_default_str();
  app.add_option("command", args.command, "PROGRAM [ARGS...], after --")->required();
}

int run_launch(const LaunchArgs& args) {
  cvtrain::SupervisorOptions options;
  options.grace_s = args.grace_s;
  return cvtrain::run_group(args.plan, args.command, options);
}

struct DataArgs {
  std::string source, destination, format = "auto", device = "cpu";
  cvtrain::PackOptions pack;
  cvtrain::PipelineBenchOptions bench;
  bool verify = false, json = false;
};

std::unique_ptr<cvtrain::Dataset> open_for_tool(const std::string& path, const std::string& format) {
  cvtrain::DataSpec spec;
  spec.format = format == "auto" ? cvtrain::detect_format(path) : *cvtrain::enum_of<cvtrain::DataFormat>(format);
  return cvtrain::open_dataset(spec, path, 0);
}

int run_data_pack(const DataArgs& args) {
  const auto source = open_for_tool(args.source, args.format);
  cvtrain::log::info("packing {} samples of {} into {} shard(s) in {}", source->size(), args.source, args.pack.shards,
                     args.destination);
  cvtrain::Stopwatch clock;
  const cvtrain::PackReport report = cvtrain::pack_shards(*source, source->class_names(), args.destination, args.pack);
  cvtrain::log::info("wrote {} samples ({} re-encoded, {} skipped as unusable), {:.1f} MB in {}", report.written,
                     report.reencoded, report.skipped, static_cast<double>(report.bytes) / 1e6,
                     cvtrain::format_duration(clock.seconds()));
  return 0;
}

int run_data_inspect(const DataArgs& args) {
  const cvtrain::ShardInspection inspection = cvtrain::inspect_shards(args.source, args.verify);
  std::fputs(inspection.summary().c_str(), stdout);
  return inspection.unreadable.empty() ? 0 : cvtrain::kExitRuntimeError;
}

std::string bench_view(const cvtrain::PipelineBenchOptions& o) {
  if (o.evaluation) return "evaluation view";
  std::string view = "RandomResizedCrop + flip";
  if (!o.auto_augment.empty()) view += " + " + o.auto_augment;
  if (o.random_erasing > 0) view += fmt::format(" + random erasing {} (normalised)", o.random_erasing);
  return view;
}

int run_data_bench(DataArgs args) {
  const auto dataset = open_for_tool(args.source, args.format);
  if (args.device == "cuda" && cvtrain::visible_cuda_devices() == 0) throw cvtrain::Error("--device cuda: no CUDA device is visible");
  args.bench.device = c10::Device(args.device == "cuda" ? c10::kCUDA : c10::kCPU);
  const cvtrain::PipelineBenchResult r = cvtrain::bench_pipeline(*dataset, args.bench);
  const double per_worker = r.images_per_s / static_cast<double>(std::max<int64_t>(1, args.bench.workers));
  if (args.json) {
    std::printf("{\"images_per_s\": %.2f, \"images\": %lld, \"seconds\": %.3f, \"workers\": %lld, \"cores_busy\": %.2f, "
                "\"bad_samples\": %lld, \"decoder\": \"%s\", \"gpu_decoded\": %lld, \"gpu_regions\": %s}\n",
                r.images_per_s, static_cast<long long>(r.images), r.seconds, static_cast<long long>(args.bench.workers), r.cores_busy,
                static_cast<long long>(r.bad_samples), args.bench.decoder.c_str(), static_cast<long long>(r.gpu_decoded),
                r.gpu_regions ? "true" : "false");
  } else {
    std::printf("%s: %lld images (%s) in %.2f s = %.1f images/s with %lld worker(s) (%.1f per worker, %.1f host cores busy), to %s, "
                "%lld unusable\n",
                args.source.c_str(), static_cast<long long>(r.images), bench_view(args.bench).c_str(), r.seconds, r.images_per_s,
                static_cast<long long>(args.bench.workers), per_worker, r.cores_busy, args.device.c_str(),
                static_cast<long long>(r.bad_samples));
    if (args.bench.decoder == "nvjpeg")
      std::printf("  decoded by nvJPEG (%s backend, %s): %lld of %lld images; the rest by the workers\n", r.gpu_backend.c_str(),
                  r.gpu_regions ? "only each crop's region" : "whole images", static_cast<long long>(r.gpu_decoded),
                  static_cast<long long>(r.images));
  }
  return 0;
}

int run_data_preview(const cvtrain::Recipe& recipe, const cvtrain::PreviewOptions& options) {
  const cvtrain::PreviewResult result = cvtrain::write_sample_preview(recipe, options);
  cvtrain::log::info("{} training samples of epoch {} as the step receives them: {} ({}x{})", result.samples, options.epoch, options.out,
                     result.width, result.height);
  return 0;
}

struct ReportArgs {
  std::string run, out;
};

int run_sweep_report(const ReportArgs& args) {
  const cvtrain::SweepHistory sweep = cvtrain::read_sweep_history(args.run);
  const std::string out = args.out.empty() ? (std::filesystem::path(args.run) / "report.html").string() : args.out;
  cvtrain::write_file_atomically(out, cvtrain::sweep_report_html(sweep, cvtrain::utc_now()));
  for (const std::string& note : sweep.notes) cvtrain::log::info("{}", note);
  cvtrain::log::info("report of sweep {} ({} trials{}) written to {}", args.run, sweep.trials.size(),
                     sweep.best_trial.empty() ? "" : ", best " + sweep.best_trial, out);
  return 0;
}

int run_report(const ReportArgs& args) {
  if (cvtrain::is_sweep_folder(args.run)) return run_sweep_report(args);
  const cvtrain::RunHistory history = cvtrain::read_run_history(args.run);
  const std::string out = args.out.empty() ? (std::filesystem::path(args.run) / "report.html").string() : args.out;
  cvtrain::write_file_atomically(out, cvtrain::run_report_html(history, cvtrain::utc_now()));
  for (const std::string& note : history.notes) cvtrain::log::info("{}", note);
  cvtrain::log::info("report of {} ({} metrics lines, {} epochs) written to {}", args.run, history.intervals.size(),
                     history.epochs.size(), out);
  return 0;
}

int run_models() {
  for (const auto& name : cvtrain::model_names()) std::cout << name << "\n";
  return 0;
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{"cvtrain: distributed training of vision models from one YAML recipe.\n"
               "  cvtrain --recipe recipes/quickstart.yaml [KEY=VALUE ...]   train (same as `cvtrain train`)\n"
               "  cvtrain check --recipe FILE [--no-paths] [KEY=VALUE ...]  validate and print the resolved recipe\n"
               "  cvtrain models                                            list model architectures\n"
               "  cvtrain launch --nproc-per-node N -- PROGRAM [ARGS...]    run and supervise one process per rank\n"
               "  cvtrain data pack SRC DST | inspect DIR | bench PATH      dataset shards and input-pipeline speed\n"
               "  cvtrain eval --recipe FILE [--checkpoint DIR | --weights F] top-1, top-5 and loss on data.val\n"
               "  cvtrain export CHECKPOINT --out FILE.safetensors          weights for torchvision / timm\n"
               "  cvtrain report RUN|SWEEP [--out FILE.html]                one HTML page: curves, step breakdown, ranks, verdicts\n"
               "  cvtrain preflight --recipe FILE [KEY=VALUE ...]           measure ranks, links and input pipeline before training\n"
               "  cvtrain sweep --recipe FILE [--space S.yaml]              trials over a search space (grid, random, TPE; ASHA)\n"
               "Exit codes: 0 success, 1 runtime error, 2 recipe or usage error, 75 stopped by SIGTERM/SIGUSR1/SIGINT\n"
               "after saving a checkpoint (run again to resume).",
               "cvtrain"};
  app.set_version_flag("--version", std::string("cvtrain ") + cvtrain::kVersion);
  app.footer("Recipe keys and their defaults are listed in README.md; `cvtrain check` prints every key of a recipe.");
  RecipeArgs top, train_args, check_args;
  add_recipe_args(app, top, false);
  auto* train_cmd = app.add_subcommand("train", "Train as the recipe says (the default when no subcommand is given)");
  add_recipe_args(*train_cmd, train_args, true);
  auto* check_cmd = app.add_subcommand("check", "Validate a recipe and print it resolved (inheritance, overrides, derived batch)");
  add_recipe_args(*check_cmd, check_args, true);
  check_cmd->add_flag("--no-paths{false}", check_args.check_paths,
                      "Check keys and values only, not that data folders and the pretrained file exist (e.g. on a login node)");
  auto* models_cmd = app.add_subcommand("models", "List the model architectures model.arch accepts");
  LaunchArgs launch_args;
  auto* launch_cmd = app.add_subcommand(
      "launch",
      "Run PROGRAM once per rank with torchrun's variables (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,\n"
      "GROUP_RANK, MASTER_ADDR, MASTER_PORT), output prefixed by rank, signals forwarded; on the first failure\n"
      "the other ranks are stopped and the job exits with the failed rank's code.\n"
      "  cvtrain launch --nproc-per-node 4 -- ./my_rank_program --flag");
  add_launch_args(*launch_cmd, launch_args);
  DataArgs data_args;
  auto* data_cmd = app.add_subcommand("data", "Dataset tools: pack into shards, inspect shards, benchmark the input pipeline");
  data_cmd->require_subcommand(1);
  const auto add_format = [&](CLI::App* cmd) {
    cmd->add_option("--format", data_args.format, "auto | idx | imagefolder | shards (auto: from what the path is)")
        ->check(CLI::IsMember({"auto", "idx", "imagefolder", "shards"}))
        ->capture_default_str();
  };
  auto* pack_cmd = data_cmd->add_subcommand(
      "pack", "Write SRC (an ImageFolder tree, IDX file or shards) as packed shards in DST, samples in SRC's order;\n"
              "JPEGs that need no resize are copied byte for byte, everything else becomes JPEG");
  pack_cmd->add_option("src", data_args.source, "Source dataset")->required();
  pack_cmd->add_option("dst", data_args.destination, "Output folder (created; only earlier shards in it are replaced)")->required();
  pack_cmd->add_option("--shards", data_args.pack.shards, "Number of shard files")->check(CLI::Range(1, 100000))->capture_default_str();
  pack_cmd->add_option("--resize", data_args.pack.resize, "Shrink the shorter side to this many pixels (0: keep)")
      ->check(CLI::Range(0, 65536))->capture_default_str();
  pack_cmd->add_option("--quality", data_args.pack.quality, "JPEG quality of re-encoded images")->check(CLI::Range(1, 100))->capture_default_str();
  pack_cmd->add_option("--workers", data_args.pack.workers, "Decode/encode threads")->check(CLI::Range(1, 256))->capture_default_str();
  pack_cmd->add_option("--max-image-pixels", data_args.pack.max_image_pixels,
                       "Skip larger images as unusable, on their header's size, as data.max_image_pixels does (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  add_format(pack_cmd);
  RecipeArgs preview_recipe;
  cvtrain::PreviewOptions preview;
  auto* preview_cmd = data_cmd->add_subcommand(
      "preview", "Write a PNG grid of the first training samples of an epoch exactly as the step receives them (crop,\n"
                 "flip, augment.auto_augment, random erasing, Mixup/CutMix), denormalised, with their labels");
  add_recipe_args(*preview_cmd, preview_recipe, true);
  preview_cmd->add_option("--out,-o", preview.out, "The PNG file")->capture_default_str();
  preview_cmd->add_option("--count", preview.count, "Samples, in the epoch's order (mixed as one micro-batch)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  preview_cmd->add_option("--epoch", preview.epoch, "Which epoch's samples and draws")->check(CLI::NonNegativeNumber)->capture_default_str();
  auto* inspect_cmd = data_cmd->add_subcommand("inspect", "Summarise a shards folder: samples, shards, classes, sizes");
  inspect_cmd->add_option("dir", data_args.source, "Folder written by `cvtrain data pack`")->required();
  inspect_cmd->add_flag("--verify", data_args.verify, "Decode every sample; exit 1 if any is unusable");
  auto* bench_cmd = data_cmd->add_subcommand(
      "bench", "Time the training input pipeline alone (decode, RandomResizedCrop, flip, batching[, copy to GPU])");
  bench_cmd->add_option("path", data_args.source, "Dataset")->required();
  bench_cmd->add_option("--workers", data_args.bench.workers, "Decode threads")->check(CLI::Range(1, 256))->capture_default_str();
  bench_cmd->add_option("--batch", data_args.bench.batch_size, "Batch size")->check(CLI::Range(1, 65536))->capture_default_str();
  bench_cmd->add_option("--image-size", data_args.bench.image_size, "Output side")->check(CLI::Range(8, 4096))->capture_default_str();
  bench_cmd->add_option("--batches", data_args.bench.batches, "Timed batches (after one warm-up batch)")
      ->check(CLI::Range(1, 1000000))->capture_default_str();
  bench_cmd->add_option("--device", data_args.device, "cpu | cuda (cuda: also copy and normalise on the GPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  bench_cmd->add_flag("--eval", data_args.bench.evaluation,
                      "Time the evaluation view (torchvision's Resize + CenterCrop, pixel for pixel) instead of "
                      "RandomResizedCrop + flip");
  bench_cmd->add_option("--auto-augment", data_args.bench.auto_augment,
                        "After crop and flip, this augment.auto_augment policy (e.g. rand-m9-mstd0.5-inc1; its geometric ops resample\n"
                        "bilinearly)");
  bench_cmd->add_option("--random-erasing", data_args.bench.random_erasing,
                        "augment.random_erasing.prob (pixel mode), planned in the workers and filled after normalising; also\n"
                        "times the normalisation on the CPU, as timm's loader returns normalised, erased tensors")
      ->check(CLI::Range(0.0, 1.0));
  bench_cmd->add_option("--decoder", data_args.bench.decoder,
                        "cpu | nvjpeg (nvjpeg, with --device cuda: as data.decoder nvjpeg trains, the workers only read and plan\n"
                        "files and nvJPEG decodes them in batches on the GPU, crop and flip rendered there; files it does not\n"
                        "take are decoded by the workers)")
      ->check(CLI::IsMember({"cpu", "nvjpeg"}))->capture_default_str();
  bench_cmd->add_flag("--json", data_args.json, "Print one JSON object");
  add_format(bench_cmd);
  EvalArgs eval_args;
  auto* eval_cmd = app.add_subcommand(
      "eval", "Evaluate weights on data.val without training, as timm's validate.py: top-1, top-5 and loss over every\n"
              "sample once, on the recipe's ranks and strategy, at model.image_size and data.eval_crop_fraction (override\n"
              "them to evaluate at another resolution or crop). Prints the figures and writes them to OUTPUT/eval.json");
  add_recipe_args(*eval_cmd, eval_args.recipe, true);
  auto* checkpoint_option = eval_cmd->add_option("--checkpoint", eval_args.request.checkpoint,
                                                 "A checkpoint folder (run/checkpoints/step-N) or a run folder (its newest)");
  eval_cmd->add_option("--weights", eval_args.request.weights, "A safetensors file with torchvision (ResNet) / timm (ViT, ConvNeXt) key "
                                                               "names, e.g. from `cvtrain export` (default: model.pretrained)")
      ->check(CLI::ExistingFile)->excludes(checkpoint_option);
  eval_cmd->add_flag("--ema", eval_args.request.ema, "The checkpoint's train.ema weight average instead of its raw weights")
      ->needs(checkpoint_option);
  eval_cmd->add_option("--batch", eval_args.request.batch, "Images per rank and forward pass (default: train.micro_batch, 64 when auto)")
      ->check(CLI::Range(1, 65536));
  eval_cmd->add_option("--out,-o", eval_args.out, "The JSON file (default: OUTPUT/eval.json)");
  ExportArgs export_args;
  auto* export_cmd = app.add_subcommand(
      "export", "Write a checkpoint's weights as one safetensors file with torchvision (ResNet) / timm (ViT, ConvNeXt)\n"
                "key names, which those libraries load without edits; prints the Python lines that load it");
  export_cmd->add_option("checkpoint", export_args.checkpoint, "A checkpoint folder (run/checkpoints/step-N) or a run folder (its newest)")
      ->required();
  export_cmd->add_option("--out,-o", export_args.out, "Output .safetensors file")->required();
  export_cmd->add_option("--dtype", export_args.dtype, "keep | fp32 | bf16 | fp16 (floating tensors; integer buffers keep theirs)")
      ->check(CLI::IsMember({"keep", "fp32", "bf16", "fp16"}))->capture_default_str();
  export_cmd->add_flag("--ema", export_args.ema, "The weight average of train.ema instead of the raw weights");
  RecipeArgs preflight_args;
  auto* preflight_cmd = app.add_subcommand(
      "preflight", "Run the recipe's ranks for a few seconds without training: each rank's matrix-product rate, host-to-device\n"
                   "bandwidth (CUDA), its input pipeline against what its model consumes, and the all-reduce bus bandwidth;\n"
                   "names the rank, link or pipeline that would hold the job back. Writes OUTPUT/preflight.json");
  add_recipe_args(*preflight_cmd, preflight_args, true);
  ReportArgs report_args;
  auto* report_cmd = app.add_subcommand(
      "report", "Write one self-contained HTML page of a run folder (no network needed to view it): key figures, the\n"
                "profiler's verdicts, loss and accuracy, throughput, the step-time breakdown, per-rank step times, memory,\n"
                "the resolved recipe and provenance. Works on a run still going (from what it has written so far). Given a sweep's\n"
                "folder: every trial's learning curve, the metric against each searched key, the trials best first and the\n"
                "best trial's recipe");
  report_cmd->add_option("run", report_args.run, "A run folder (the recipe's `output`) or a sweep folder (it holds sweep.jsonl)")->required();
  report_cmd->add_option("--out,-o", report_args.out, "The HTML file (default: RUN/report.html)");
  SweepArgs sweep_args;
  auto* sweep_cmd = app.add_subcommand(
      "sweep", "Hyperparameter search: trials of the recipe with values from a search space (--space FILE or the recipe's sweep:\n"
               "section; grid, random or tpe, optionally ASHA early stopping), each an ordinary run folder under the sweep's folder,\n"
               "`parallel` at a time on this machine's GPUs (gpus_per_trial each) or cores, or inside a Slurm allocation as one\n"
               "srun job step per trial. Every candidate recipe is checked first. Started again, a sweep reruns no finished trial\n"
               "and resumes the interrupted ones. Writes SWEEP/sweep.jsonl, SWEEP/results.md (best first) and SWEEP/best_recipe.yaml;\n"
               "`cvtrain report SWEEP` draws it");
  add_recipe_args(*sweep_cmd, sweep_args.recipe, true);
  sweep_cmd->add_option("--space,-s", sweep_args.space, "The search space YAML file (see README, \"Sweeps\"); default: the recipe's sweep: section")
      ->check(CLI::ExistingFile);
  sweep_cmd->add_option("--out,-o", sweep_args.out, "The sweep's folder (default: the recipe's output + _sweep)");
  sweep_cmd->add_option("--launcher", sweep_args.launcher, "How trials start: local (this machine's GPUs or cores), srun (one job step "
                                                           "each inside this Slurm allocation), auto (srun inside an allocation)")
      ->check(CLI::IsMember({"auto", "local", "srun"}))
      ->capture_default_str();
  app.require_subcommand(0, 1);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : cvtrain::kExitRecipeError;
  }
  try {
    if (*check_cmd) return run_check(check_args);
    if (*models_cmd) return run_models();
    if (*launch_cmd) return run_launch(launch_args);
    if (*pack_cmd) return run_data_pack(data_args);
    if (*inspect_cmd) return run_data_inspect(data_args);
    if (*preview_cmd) return run_data_preview(load(preview_recipe), preview);
    if (*bench_cmd) return run_data_bench(data_args);
    if (*eval_cmd) return run_eval(eval_args, argc, argv);
    if (*sweep_cmd) return run_sweep_command(sweep_args);
    if (*export_cmd) return run_export(export_args);
    if (*report_cmd) return run_report(report_args);
    if (*preflight_cmd) return run_preflight_only(preflight_args, argc, argv);
    if (*train_cmd) return run_train(train_args, argc, argv);
    if (top.recipe.empty()) {
      std::cerr << app.help();
      return cvtrain::kExitRecipeError;
    }
    return run_train(top, argc, argv);
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

// Every file of a run is closed (and renamed into place) before run_cli returns, and no thread is
// left; what remains are libtorch's and CUDA's static destructors, which take a fifth of a second
// per process (every rank and the launcher) and do nothing a finished process needs.
int main(int argc, char** argv) {
  const int code = run_cli(argc, argv);
  std::fflush(nullptr);
  std::_Exit(code);
}
