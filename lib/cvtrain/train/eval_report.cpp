// eval.json and the evaluation's line (see eval_report.h).
#include "cvtrain/train/eval_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "cvtrain/core/text.h"
#include "cvtrain/data/dataset.h"
#include "cvtrain/observe/metric_records.h"
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

std::string number_or_null(double v) { return std::isfinite(v) ? fmt::format("{:.10g}", v) : "null"; }

// Segmentation's report: the scores, then every class's IoU by name (null: neither seen nor predicted).
std::string segmentation_json(const EvalReport& r, const Recipe& recipe) {
  std::string scores, classes;
  for (const auto& [name, value] : r.result.scores) scores += fmt::format("{}: {}, ", json_string(name), number_or_null(value));
  for (size_t c = 0; c < r.result.class_iou.size(); ++c)
    classes += fmt::format("{}{}: {}", c ? ", " : "", json_string(c < r.classes.names.size() ? r.classes.names[c] : std::to_string(c)),
                           number_or_null(r.result.class_iou[c]));
  return fmt::format(
      "{{\"task\": \"segmentation\", {}\"loss\": {:.10g}, \"samples\": {}, \"weights\": {}, \"ema\": {}, \"checkpoint_step\": {}, "
      "\"arch\": {}, \"precision\": {}, \"data\": {}, \"world_size\": {}, \"seconds\": {:.3f}, \"images_per_s\": {:.1f}, \"by\": {}, "
      "\"class_iou\": {{{}}}}}\n",
      scores, r.result.loss, r.result.samples, json_string(r.weights_file), r.ema ? "true" : "false",
      r.checkpoint_step >= 0 ? std::to_string(r.checkpoint_step) : "null", json_string(recipe.model.arch),
      json_string(name_of(recipe.precision)), json_string(recipe.data.val), r.world_size, r.seconds,
      r.seconds > 0 ? static_cast<double>(r.result.samples) / r.seconds : 0.0, json_string(r.by), classes);
}

// "mIoU … on N images of data.val (…)", then each class's IoU, lowest first.
std::string segmentation_line(const EvalReport& r, const Recipe& recipe) {
  std::vector<size_t> order(r.result.class_iou.size());
  for (size_t c = 0; c < order.size(); ++c) order[c] = c;
  const auto iou = [&](size_t c) { return std::isnan(r.result.class_iou[c]) ? 2.0 : r.result.class_iou[c]; };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return iou(a) < iou(b); });
  std::vector<std::string> classes;
  for (size_t c : order)
    classes.push_back(fmt::format("{} {}", c < r.classes.names.size() ? r.classes.names[c] : std::to_string(c),
                                  std::isnan(r.result.class_iou[c]) ? std::string("-") : fmt::format("{:.4f}", r.result.class_iou[c])));
  return fmt::format("{} loss {:.4f} on {} images of {} ({}{}{}, {} rank(s), {:.1f} s)\n  IoU by class, lowest first: {}",
                     scores_text(r.result.scores), r.result.loss, r.result.samples, recipe.data.val, r.weights_file,
                     r.ema ? ", weight average" : "", r.checkpoint_step >= 0 ? fmt::format(", step {}", r.checkpoint_step) : "",
                     r.world_size, r.seconds, join(classes, ", "));
}

}  // namespace

bool images_kept_whole(const Dataset& val, int64_t image_size) {
  if (val.size() == 0) return false;
  const RawSample first = val.read(0);
  return first.has_pixels() && first.image.width == image_size && first.image.height == image_size;
}

std::string eval_report_json(const EvalReport& r, const Recipe& recipe) {
  if (!r.result.class_iou.empty()) return segmentation_json(r, recipe);
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
  if (!r.result.class_iou.empty()) return segmentation_line(r, recipe);
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
