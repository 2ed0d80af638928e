// The commands that use trained weights: eval (scores them on data.val), export (writes them for
// timm and torchvision) and predict (labels image files with them).
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <regex>

#include "command.h"
#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/core/text_file.h"
#include "cvtrain/launch/job.h"
#include "cvtrain/launch/rank_environment.h"
#include "cvtrain/models/safetensors.h"
#include "cvtrain/tools/export.h"
#include "cvtrain/tools/mask_prediction.h"
#include "cvtrain/tools/prediction.h"
#include "cvtrain/tools/weights_evaluation.h"
#include "cvtrain/train/checkpoint.h"

namespace cvtrain::cli {
namespace {

// A result file, its folder created first.
void write_result(const std::string& path, const std::string& contents) {
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (!folder.empty()) std::filesystem::create_directories(folder);
  write_file_atomically(path, contents);
}

// A folder of this process's own under the system's temporary one, removed with the object.
struct ScratchFolder {
  std::filesystem::path path = std::filesystem::temp_directory_path() / fmt::format("cvtrain-{}", getpid());
  ~ScratchFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

// The recipe a file `cvtrain export` wrote carries (export.h), written into `scratch` under the
// file's name; "" for weights without one (timm's, torchvision's, a checkpoint's own file).
std::string recipe_carried_by(const std::string& weights, const ScratchFolder& scratch) {
  const std::map<std::string, std::string> metadata = read_safetensors_metadata(weights);
  const auto recipe = metadata.find(kRecipeMetadata);
  if (recipe == metadata.end()) return "";
  std::filesystem::create_directories(scratch.path);
  const std::string path = (scratch.path / (std::filesystem::path(weights).filename().string() + ".recipe.yaml")).string();
  write_file_atomically(path, recipe->second);
  return path;
}

// --recipe's default for commands that take weights: the checkpoint's recipe.yaml, else the one an
// exported --weights file carries; else a RecipeError saying what would do.
std::string recipe_of_weights(const EvalRequest& weights, const ScratchFolder& scratch) {
  if (!weights.checkpoint.empty()) return checkpoint_folder_of(weights.checkpoint) + "/recipe.yaml";
  if (weights.weights.empty())
    throw RecipeError(
        {"name the weights: --checkpoint RUN (a run folder or one of its checkpoints), --weights F.safetensors, or "
         "--recipe R with model.pretrained"});
  const std::string carried = recipe_carried_by(weights.weights, scratch);
  if (!carried.empty()) return carried;
  const std::filesystem::path folder = std::filesystem::path(weights.weights).parent_path();
  if (std::filesystem::exists(folder / "COMPLETE") && std::filesystem::exists(folder / "recipe.yaml"))
    throw RecipeError({fmt::format("--weights {}: the file lies in a checkpoint, which brings its recipe: write --checkpoint {}",
                                   weights.weights, folder.string())});
  throw RecipeError(
      {fmt::format("--weights {}: give --recipe too (its model section: model.arch, model.num_classes, "
                   "model.image_size); a checkpoint brings its own, and so does a file cvtrain export wrote",
                   weights.weights)});
}

struct EvalArgs {
  RecipeArgs recipe;
  EvalRequest request;
  std::string out;
};

// The job's ranks, launched as training would launch them, evaluate and stop; rank 0 prints the
// figures and writes them as JSON.
int run_eval(EvalArgs& args, int argc, char** argv) {
  const ScratchFolder scratch;
  if (args.recipe.recipe.empty()) args.recipe.recipe = recipe_of_weights(args.request, scratch);
  return as_rank_or_launcher(args.recipe, argc, argv, [&args](const Recipe& recipe, const std::optional<RankInfo>& rank) {
    const EvalReport report = evaluate_weights(recipe, rank_of_process(rank, recipe.distributed), args.request);
    if (rank && rank->rank != 0) return 0;
    const std::string out = args.out.empty() ? (std::filesystem::path(recipe.output) / "eval.json").string() : args.out;
    write_result(out, eval_report_json(report, recipe));
    std::printf("%s\n", eval_report_line(report, recipe).c_str());
    log::info("written to {}", out);
    return 0;
  });
}

Command add_eval_command(CLI::App& app, int argc, char** argv) {
  auto args = std::make_shared<EvalArgs>();
  auto* cmd = app.add_subcommand("eval",
                                 "Evaluate weights on data.val without training, as timm's validate.py: top-1, top-5 and loss over every\n"
                                 "sample once, on the recipe's ranks and strategy, at model.image_size, data.eval_crop_fraction and\n"
                                 "data.eval_interpolation (override them to evaluate at another resolution, crop or filter: timm's ViT,\n"
                                 "DeiT and ConvNeXt weights were scored bicubic). Prints the figures and writes them to OUTPUT/eval.json");
  add_recipe_args(*cmd, args->recipe, false);
  cmd->get_option("--recipe")->description("YAML recipe (default: the checkpoint's own, or the one a file cvtrain export wrote carries)");
  auto* checkpoint_option = cmd->add_option("--checkpoint", args->request.checkpoint,
                                            "A checkpoint folder (run/checkpoints/step-N) or a run folder (its newest)");
  cmd->add_option("--weights", args->request.weights,
                  "A safetensors file with torchvision (ResNet) / timm (ViT, ConvNeXt) key "
                  "names, e.g. from `cvtrain export` (default: model.pretrained)")
      ->check(CLI::ExistingFile)
      ->excludes(checkpoint_option);
  cmd->add_flag("--ema", args->request.ema, "The checkpoint's train.ema weight average instead of its raw weights")
      ->needs(checkpoint_option);
  cmd->add_option("--batch", args->request.batch, "Images per rank and forward pass (default: train.micro_batch, 64 when auto)")
      ->check(CLI::Range(1, 65536));
  cmd->add_option("--out,-o", args->out, "The JSON file (default: OUTPUT/eval.json)");
  return {cmd, [args, argc, argv] { return run_eval(*args, argc, argv); }};
}

struct ExportArgs {
  std::string checkpoint, out, dtype = "keep";
  bool ema = false;
};

int run_export(const ExportArgs& args) {
  const ExportResult result = export_weights(args.checkpoint, args.out, args.dtype, args.ema);
  log::info("{}: {} tensors, {:.1f} M values of {}{} (step {}) written to {}", result.checkpoint, result.tensors,
            static_cast<double>(result.values) / 1e6, result.arch, result.ema ? "'s weight average" : "", result.step, args.out);
  std::cout << loading_hint(result, args.out) << "\n";
  log::info("{} in the file: cvtrain predict --weights {} IMAGES labels images with it",
            result.class_names > 0 ? fmt::format("its recipe and {} class names travel", result.class_names) : "its recipe travels",
            args.out);
  return 0;
}

Command add_export_command(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  auto* cmd = app.add_subcommand("export",
                                 "Write a checkpoint's weights as one safetensors file with torchvision (ResNet) / timm (ViT, ConvNeXt)\n"
                                 "key names, which those libraries load without edits; prints the Python lines that load it");
  cmd->add_option("checkpoint", args->checkpoint, "A checkpoint folder (run/checkpoints/step-N) or a run folder (its newest)")->required();
  cmd->add_option("--out,-o", args->out, "Output .safetensors file")
      ->check(file_named(".safetensors", "the weights are written as safetensors (torch.load cannot read them)"))
      ->required();
  cmd->add_option("--dtype", args->dtype, "keep | fp32 | bf16 | fp16 (floating tensors; integer buffers keep theirs)")
      ->check(CLI::IsMember({"keep", "fp32", "bf16", "fp16"}))
      ->capture_default_str();
  cmd->add_flag("--ema", args->ema, "The weight average of train.ema instead of the raw weights");
  return {cmd, [args] { return run_export(*args); }};
}

struct PredictArgs {
  RecipeArgs recipe;
  PredictRequest request;
  std::vector<std::string> arguments;  // images and folders, and KEY=VALUE overrides
  std::string out;
};

// The command line's words after the options: a path that exists is an input, a KEY=VALUE that is
// none is a recipe override, anything else an input (which predict_images then names as missing).
void split_inputs_and_overrides(PredictArgs& args) {
  static const std::regex override_pattern("[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z0-9_]+)*=.*");
  for (const std::string& word : args.arguments) {
    std::error_code ec;
    if (!std::filesystem::exists(word, ec) && std::regex_match(word, override_pattern))
      args.recipe.overrides.push_back(word);
    else
      args.request.inputs.push_back(word);
  }
}

// --recipe, else the recipe the checkpoint was trained with (its model, data and precision
// sections; an exported file carries it too); the data need not be on this machine.
Recipe prediction_recipe(PredictArgs& args) {
  args.recipe.check_paths = false;
  const ScratchFolder scratch;
  if (args.recipe.recipe.empty()) {
    const std::string& first = args.request.inputs.front();
    const bool no_weights = args.request.weights.checkpoint.empty() && args.request.weights.weights.empty();
    // `cvtrain predict runs/x photo.jpg`, as `cvtrain export runs/x` is spelled: the run is no image.
    if (no_weights && (std::filesystem::exists(first + "/checkpoints") || std::filesystem::exists(first + "/COMPLETE")))
      throw RecipeError({fmt::format("{} is a run or checkpoint, not images: write --checkpoint {}", first, first)});
    args.recipe.recipe = recipe_of_weights(args.request.weights, scratch);
  }
  return load(args.recipe);
}

constexpr size_t kLinesPrinted = 20;

// 0, or 1 with an error that names the first file that could not be read (beyond the lines printed,
// it would otherwise be named only in the file written).
template <class Report, class LineOf>
int exit_for_unreadable(const Report& report, const std::string& written, LineOf line_of) {
  if (report.unreadable() == 0) return 0;
  const auto first = std::find_if(report.images.begin(), report.images.end(), [](const auto& image) { return !image.error.empty(); });
  log::error("{} of {} file(s) could not be read, the first {}; their rows in {} say why", report.unreadable(), report.images.size(),
             line_of(*first, report.class_names), written);
  return kExitRuntimeError;
}

// A segmentation model's masks: two PNGs per file in the folder (--out, default OUTPUT/predictions)
// and predictions.csv there.
int run_predict_masks(const PredictArgs& args, const Recipe& recipe) {
  const std::string folder = args.out.empty() ? (std::filesystem::path(recipe.output) / "predictions").string() : args.out;
  const MaskPredictionReport report = predict_masks(recipe, args.request, folder);
  const std::string csv = (std::filesystem::path(folder) / "predictions.csv").string();
  write_result(csv, mask_predictions_csv(report));
  for (size_t i = 0; i < report.images.size() && i < kLinesPrinted; ++i)
    std::printf("%s\n", mask_prediction_line(report.images[i], report.class_names).c_str());
  if (report.images.size() > kLinesPrinted) std::printf("... %zu more in %s\n", report.images.size() - kLinesPrinted, csv.c_str());
  log::info("{} mask(s) of {} file(s) in {:.1f} s, weights {}{}; class names from {}; ids and colours in {}, class shares in {}",
            static_cast<int64_t>(report.images.size()) - report.unreadable(), report.images.size(), report.seconds, report.weights_file,
            report.checkpoint_step >= 0 ? fmt::format(" (step {})", report.checkpoint_step) : "", report.class_names_from, folder, csv);
  return exit_for_unreadable(report, csv, mask_prediction_line);
}

int run_predict(PredictArgs& args) {
  split_inputs_and_overrides(args);
  if (args.request.inputs.empty()) throw RecipeError({"cvtrain predict: name the image files or folders to predict"});
  const Recipe recipe = prediction_recipe(args);
  if (recipe.task == TaskKind::kSegmentation) return run_predict_masks(args, recipe);
  const PredictionReport report = predict_images(recipe, args.request);
  const std::string out = args.out.empty() ? (std::filesystem::path(recipe.output) / "predictions.csv").string() : args.out;
  const bool jsonl = std::filesystem::path(out).extension() == ".jsonl";
  write_result(out, jsonl ? predictions_jsonl(report) : predictions_csv(report, args.request.top_k));
  for (size_t i = 0; i < report.images.size() && i < kLinesPrinted; ++i)
    std::printf("%s\n", prediction_line(report.images[i], report.class_names).c_str());
  if (report.images.size() > kLinesPrinted) std::printf("... %zu more in %s\n", report.images.size() - kLinesPrinted, out.c_str());
  const auto n = static_cast<double>(report.images.size());
  log::info("{} image(s) in {:.1f} s ({:.0f} images/s), weights {}{}; class names from {}; written to {}", report.images.size(),
            report.seconds, report.seconds > 0 ? n / report.seconds : 0.0, report.weights_file,
            report.checkpoint_step >= 0 ? fmt::format(" (step {})", report.checkpoint_step) : "", report.class_names_from, out);
  return exit_for_unreadable(report, out, prediction_line);
}

Command add_predict_command(CLI::App& app) {
  auto args = std::make_shared<PredictArgs>();
  auto* cmd =
      app.add_subcommand("predict",
                         "Label image files with trained weights: each file's most probable classes and their probabilities, the\n"
                         "image seen through the evaluation view (model.image_size, data.eval_crop_fraction, data.eval_interpolation)\n"
                         "as cvtrain eval sees data.val. A checkpoint brings its recipe; folders are read at any depth. Prints the\n"
                         "first files' classes and writes every file's to OUTPUT/predictions.csv (or --out; .jsonl for JSON lines).\n"
                         "An unreadable file gets a row saying why, the others go on, and the exit code is 1.\n"
                         "A segmentation model (task: segmentation) writes each file's mask at the file's size instead, as label ids\n"
                         "(NAME.png) and in colour (NAME_colour.png), into OUTPUT/predictions (or --out), with each class's share\n"
                         "of the pixels in predictions.csv there.\n"
                         "  cvtrain predict --checkpoint runs/quickstart photos/ shoe.png");
  cmd->add_option("--recipe,-r", args->recipe.recipe,
                  "YAML recipe (default: the checkpoint's own, or the one a file cvtrain export wrote carries)")
      ->check(CLI::ExistingFile);
  auto* checkpoint_option = cmd->add_option("--checkpoint", args->request.weights.checkpoint,
                                            "A checkpoint folder (run/checkpoints/step-N, run/best) or a run folder (its newest)");
  cmd->add_option("--weights", args->request.weights.weights,
                  "A safetensors file with torchvision (ResNet) / timm (ViT, ConvNeXt) key "
                  "names, e.g. from `cvtrain export`, which carries its recipe (others need --recipe; default: model.pretrained)")
      ->check(CLI::ExistingFile)
      ->excludes(checkpoint_option);
  cmd->add_flag("--ema", args->request.weights.ema, "The checkpoint's train.ema weight average instead of its raw weights")
      ->needs(checkpoint_option);
  cmd->add_option("--top-k,--topk,-k", args->request.top_k, "Classes per file, most probable first")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--classes", args->request.classes_file,
                  "Class names, one per line in label order (default: data.class_names, else data.train's where it is here)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--batch", args->request.weights.batch, "Images per forward pass (default: train.micro_batch, 64 when auto)")
      ->check(CLI::Range(1, 65536));
  cmd->add_option(
      "--out,-o", args->out,
      "The CSV file, or a .jsonl file (default: OUTPUT/predictions.csv); for masks, their folder (default: OUTPUT/predictions)");
  cmd->add_option("inputs", args->arguments, "Image files and folders, and KEY=VALUE recipe overrides")->required();
  return {cmd, [args] { return run_predict(*args); }};
}

}  // namespace

std::vector<Command> add_weights_commands(CLI::App& app, int argc, char** argv) {
  return {add_eval_command(app, argc, argv), add_export_command(app), add_predict_command(app)};
}

}  // namespace cvtrain::cli
