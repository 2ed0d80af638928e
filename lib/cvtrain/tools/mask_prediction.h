// `cvtrain predict` for a segmentation model: each image's predicted mask at the image's own size,
// written twice into a folder, as raw label ids (8-bit gray PNG, what masks are stored as) and
// colourised (a palette PNG in the dataset's colours), with a CSV of each file's class shares.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cvtrain/tools/prediction.h"

namespace cvtrain {

struct MaskPrediction {
  std::string file;
  std::string labels_png, colour_png;  // what was written; empty for an unreadable file
  int width = 0, height = 0;
  std::vector<int64_t> class_pixels;  // per class, the pixels predicted as it
  std::string error;                  // why the file could not be read
};

struct MaskPredictionReport {
  std::vector<MaskPrediction> images;
  std::vector<std::string> class_names;
  std::string class_names_from;
  std::string weights_file;
  int64_t checkpoint_step = -1;
  double seconds = 0;
  int64_t unreadable() const;
};

// Every image of `request.inputs` through the model as evaluation sees a validation image (fitted
// within augment.scale, whole or by sliding windows as data.eval_mode says), the logits resized to
// the image's size, the most probable class per pixel written to FOLDER/<name>.png and
// FOLDER/<name>_colour.png (<name>: the file's stem, numbered when two files share one). An
// unreadable file is reported and the others go on; Error for weights that do not fit the model.
MaskPredictionReport predict_masks(const Recipe& recipe, const PredictRequest& request, const std::string& folder);

// path,labels,colour,width,height,<class 1's share>,...,error — a share is the fraction of the
// image's pixels predicted as that class.
std::string mask_predictions_csv(const MaskPredictionReport& report);
// "FILE: LABELS.png; road 41.2 %, car 12.0 %, ..." (the largest shares first) or "FILE: unreadable (why)".
std::string mask_prediction_line(const MaskPrediction& image, const std::vector<std::string>& class_names);

}  // namespace cvtrain
