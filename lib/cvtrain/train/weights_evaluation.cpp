// evaluate_weights: choose the weights, load them strictly, run the evaluator, count what was unusable.
#include "cvtrain/train/weights_evaluation.h"

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

namespace cvtrain {
namespace {

int64_t resized_side(const Recipe& recipe) {
  return static_cast<int64_t>(std::floor(static_cast<double>(recipe.model.image_size) / recipe.data.eval_crop_fraction));
}

// How the centre view was made: "224 px from a 256 px bilinear resize, crop fraction 0.875", or that
// the images already were image_size squares.
std::string center_view_text(const EvalReport& r, const Recipe& recipe) {
  if (r.kept_whole) return fmt::format("{} px images kept whole", recipe.model.image_size);
  return fmt::format("{} px from a {} px {} resize, crop fraction {}", recipe.model.image_size, resized_side(recipe),
                     name_of(recipe.data.eval_interpolation), recipe.data.eval_crop_fraction);
}

}  // namespace

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
    throw Error(fmt::format("{} (the recipe's model section must describe the model the weights were trained as; here "
                            "model.arch {}, model.num_classes {})",
                            e.what(), recipe.model.arch, recipe.model.num_classes));
  }
  if (!report.reinitialised.empty())
    throw Error(fmt::format("{}: its classifier head ({}) does not have model.num_classes {} outputs; set model.num_classes to "
                            "the class count it was trained for",
                            file, join(report.reinitialised, ", "), recipe.model.num_classes));
  if (log && report.position_embedding_resized)
    log::info("{}: position embedding interpolated to {} px", file, recipe.model.image_size);
}

int64_t batch_of(const Recipe& recipe, const EvalRequest& request) {
  if (request.batch > 0) return request.batch;
  return recipe.train.micro_batch > 0 && !recipe.train.micro_batch_auto ? recipe.train.micro_batch : 64;
}

bool images_kept_whole(const Dataset& val, int64_t image_size) {
  if (val.size() == 0) return false;
  const RawSample first = val.read(0);
  return first.has_pixels() && first.image.width == image_size && first.image.height == image_size;
}

EvalReport evaluate_weights(const Recipe& recipe, const RankInfo& rank, const EvalRequest& request) {
  EvalReport report;
  std::tie(report.weights_file, report.checkpoint_step) = choose_weights(recipe, request);
  report.ema = request.ema;
  Recipe without_pretrained = recipe;  // the chosen weights are loaded below, strictly
  without_pretrained.model.pretrained.clear();
  TrainingRun run = build_eval_run(without_pretrained, rank);
  load_for_evaluation(*run.model, report.weights_file, recipe, rank.rank == 0);
  report.batch = batch_of(recipe, request);
  report.world_size = run.comm->world_size();
  LoaderOptions loader = run.loader;
  loader.batch_size = report.batch;
  loader.bad_samples = run.data.val_bad.get();
  Stopwatch clock;
  report.result =
      evaluate(*run.model, *run.data.val, loader, run.feed, run.plan.precision, *run.comm, recipe.model.num_classes);
  report.seconds = clock.seconds();
  report.classes = class_accuracy(report.result.per_class, run.data.val->class_names());
  report.unusable = unusable_over_ranks(*run.data.val_bad, *run.comm, run.device);
  report.kept_whole = images_kept_whole(*run.data.val, recipe.model.image_size);
  return report;
}

std::string eval_report_json(const EvalReport& r, const Recipe& recipe) {
  return fmt::format(
      "{{\"top1\": {:.10g}, \"top5\": {:.10g}, \"loss\": {:.10g}, \"samples\": {}, \"unusable\": {}, \"weights\": {}, \"ema\": {}, "
      "\"checkpoint_step\": {}, \"arch\": {}, \"image_size\": {}, \"crop_fraction\": {:.10g}, \"resize\": {}, \"kept_whole\": {}, "
      "\"interpolation\": {}, "
      "\"precision\": {}, "
      "\"data\": {}, \"world_size\": {}, \"batch\": {}, \"seconds\": {:.3f}, \"images_per_s\": {:.1f}, \"by\": {}, {}}}\n",
      r.result.top1, r.result.top5, r.result.loss, r.result.samples, r.unusable, json_string(r.weights_file), r.ema ? "true" : "false",
      r.checkpoint_step >= 0 ? std::to_string(r.checkpoint_step) : "null", json_string(recipe.model.arch), recipe.model.image_size,
      recipe.data.eval_crop_fraction, resized_side(recipe), r.kept_whole ? "true" : "false",
      json_string(name_of(recipe.data.eval_interpolation)), json_string(name_of(recipe.precision)), json_string(recipe.data.val),
      r.world_size, r.batch, r.seconds, r.seconds > 0 ? static_cast<double>(r.result.samples) / r.seconds : 0.0, json_string(r.by),
      r.classes.json_members());
}

std::string eval_report_line(const EvalReport& r, const Recipe& recipe) {
  std::string text = fmt::format("top-1 {:.4f} top-5 {:.4f} loss {:.4f} on {} samples of {}{} ({}{}{}, {}, {} rank(s), {:.1f} s)",
                                 r.result.top1, r.result.top5, r.result.loss, r.result.samples, recipe.data.val,
                                 r.unusable > 0 ? fmt::format(", {} unusable counted as misses", r.unusable) : "", r.weights_file,
                                 r.ema ? ", weight average" : "", r.checkpoint_step >= 0 ? fmt::format(", step {}", r.checkpoint_step) : "",
                                 center_view_text(r, recipe), r.world_size, r.seconds) +
                     "\n" + r.classes.lines();
  text.pop_back();  // the classes' last line break: the caller ends the line
  return text;
}

}  // namespace cvtrain
