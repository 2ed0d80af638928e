// eval.json and the evaluation's line: what `cvtrain eval` and training's last evaluation report
// (top-1, top-5, loss, the centre view, per-class accuracy), in one format for `cvtrain report`.
#pragma once

#include <cstdint>
#include <string>

#include "cvtrain/observe/class_accuracy.h"
#include "cvtrain/train/evaluator.h"

namespace cvtrain {

class Dataset;
struct Recipe;

struct EvalReport {
  EvalResult result;
  std::string weights_file;      // what was loaded
  int64_t checkpoint_step = -1;  // the checkpoint's step; -1 for a weights file
  bool ema = false;
  int64_t unusable = 0;  // validation samples that could not be read (counted as misses)
  int64_t batch = 0;
  int world_size = 1;
  double seconds = 0;               // the evaluation pass, loading excluded
  ClassAccuracy classes;            // per-class top-1 and the most frequent confusions, by data.val's class names
  std::string by = "cvtrain eval";  // who evaluated: cvtrain eval, or training (its last evaluation)
  bool kept_whole = false;          // data.val's images are image_size squares, which the centre view keeps unresized
};

// Whether `val` holds decoded image_size x image_size squares (IDX, synthetic), which the centre
// view keeps whole instead of resizing by data.eval_crop_fraction; encoded files are not looked at.
bool images_kept_whole(const Dataset& val, int64_t image_size);

// The report as one JSON object, with the settings that produced it.
std::string eval_report_json(const EvalReport& report, const Recipe& recipe);
// "top-1 … top-5 … loss … on N samples of data.val (…)", then the lowest classes and the most
// frequent confusions.
std::string eval_report_line(const EvalReport& report, const Recipe& recipe);

}  // namespace cvtrain
