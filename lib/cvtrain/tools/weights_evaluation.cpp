// evaluate_weights: choose the weights, load them strictly, run the evaluator, count what was unusable.
#include "cvtrain/tools/weights_evaluation.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "cvtrain/comm/communicator.h"
#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/core/text.h"
#include "cvtrain/core/timer.h"
#include "cvtrain/data/sample_pipeline.h"
#include "cvtrain/launch/rank_environment.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/models/pretrained.h"
#include "cvtrain/models/safetensors.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/train/checkpoint.h"
#include "cvtrain/train/run_builder.h"
#include "cvtrain/train/task.h"

namespace cvtrain {

std::pair<std::string, int64_t> choose_weights(const Recipe& recipe, const EvalRequest& request) {
  if (!request.checkpoint.empty()) {
    const std::string folder = checkpoint_folder_of(request.checkpoint);
    const std::string file = folder + "/" + (request.ema ? kEmaFile : "model.safetensors");
    if (request.ema && !std::filesystem::exists(file))
      throw Error(fmt::format("{} holds no weight average (the run had train.ema off); leave --ema out", folder));
    return {file, read_position(folder).step};
  }
  if (request.ema) throw RecipeError({"--ema: the weight average is in a checkpoint; give --checkpoint with it"});
  if (!request.weights.empty()) return {request.weights, -1};
  if (!recipe.model.pretrained.empty()) return {recipe.model.pretrained, -1};
  throw RecipeError(
      {fmt::format("{}: no weights to load; give --checkpoint DIR, --weights FILE or model.pretrained", recipe.where("model.pretrained"))});
}

void load_for_evaluation(Classifier& model, const std::string& file, const Recipe& recipe, bool log) {
  PretrainedReport report;
  try {
    report = load_pretrained(model, file, /*strict=*/true);
  } catch (const NotSafetensors&) {
    throw;  // the file's format, not the model section, is what is wrong
  } catch (const Error& e) {
    throw Error(
        fmt::format("{} (the recipe's model section must describe the model the weights were trained as; here "
                    "model.arch {}, model.num_classes {})",
                    e.what(), recipe.model.arch, recipe.model.num_classes));
  }
  if (report.encoder_only)
    throw Error(fmt::format("{}: holds {}'s encoder only (ImageNet weights to start training from), no trained decoder to evaluate", file,
                            recipe.model.arch));
  if (!report.reinitialised.empty())
    throw Error(
        fmt::format("{}: its classifier head ({}) does not have model.num_classes {} outputs; set model.num_classes to "
                    "the class count it was trained for",
                    file, join(report.reinitialised, ", "), recipe.model.num_classes));
  if (log && report.position_embedding_resized) log::info("{}: position embedding interpolated to {} px", file, recipe.model.image_size);
}

int64_t batch_of(const Recipe& recipe, const EvalRequest& request) {
  if (request.batch > 0) return request.batch;
  return recipe.train.micro_batch > 0 && !recipe.train.micro_batch_auto ? recipe.train.micro_batch : 64;
}

EvalReport evaluate_weights(const Recipe& recipe, const RankInfo& rank, const EvalRequest& request) {
  EvalReport report;
  std::tie(report.weights_file, report.checkpoint_step) = choose_weights(recipe, request);
  report.ema = request.ema;
  Recipe without_pretrained = recipe;  // the chosen weights are loaded below, strictly
  without_pretrained.model.pretrained.clear();
  EvaluationParts run = build_evaluation_parts(without_pretrained, rank);
  load_for_evaluation(*run.model, report.weights_file, recipe, rank.rank == 0);
  report.batch = batch_of(recipe, request);
  report.world_size = run.comm->world_size();
  LoaderOptions loader = run.loader;
  loader.batch_size = report.batch;
  loader.bad_samples = run.data.val_bad.get();
  Stopwatch clock;
  report.result = run.task->evaluate(*run.model, *run.data.val, loader, run.feed, run.plan.precision, *run.comm, recipe.model.num_classes);
  report.seconds = clock.seconds();
  report.classes = class_accuracy(report.result.per_class, run.data.val->class_names());
  report.unusable = unusable_over_ranks(*run.data.val_bad, *run.comm, run.device);
  report.kept_whole = images_kept_whole(*run.data.val, recipe.model.image_size);
  return report;
}

}  // namespace cvtrain
