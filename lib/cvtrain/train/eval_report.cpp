// eval.json and the evaluation's line (see eval_report.h).
#include "cvtrain/train/eval_report.h"

#include <fmt/format.h>

#include <cmath>

#include "cvtrain/core/text.h"
#include "cvtrain/data/dataset.h"
#include "cvtrain/recipe/recipe.h"

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

bool images_kept_whole(const Dataset& val, int64_t image_size) {
  if (val.size() == 0) return false;
  const RawSample first = val.read(0);
  return first.has_pixels() && first.image.width == image_size && first.image.height == image_size;
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
