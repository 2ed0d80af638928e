// `cvtrain predict`: a trained model's top classes and probabilities for image files, each seen
// through the evaluation view (model.image_size, data.eval_crop_fraction, data.eval_interpolation)
// as `cvtrain eval` sees data.val; written as CSV or JSON lines, a row per file in the order given.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cvtrain/tools/weights_evaluation.h"

namespace cvtrain {

struct Recipe;

struct PredictRequest {
  EvalRequest weights;              // which weights (checkpoint, weights file, ema) and images per forward pass
  std::vector<std::string> inputs;  // image files and folders
  int64_t top_k = 5;
  std::string classes_file;  // one class name per line, label order (timm's --class-map); "": see prediction_class_names
};

struct ImagePrediction {
  std::string file;
  std::vector<int64_t> labels;        // the top classes, most probable first
  std::vector<double> probabilities;  // theirs: softmax over the logits (train.loss bce: each class's sigmoid)
  std::string error;                  // why the file could not be read; then no labels
};

struct PredictionReport {
  std::vector<ImagePrediction> images;
  std::vector<std::string> class_names;  // label i's name, or the number where no names are known
  std::string class_names_from;          // where they came from, for the log
  std::string weights_file;
  int64_t checkpoint_step = -1;
  double seconds = 0;  // reading, decoding and the forward passes
  int64_t unreadable() const;
};

// The images of `request.inputs` through the recipe's model with the requested weights, on the
// recipe's device in its precision. An unreadable file gets a row with its error and the others
// go on. Throws Error for an input that does not exist and for weights that do not fit the model;
// RecipeError when no weights are named.
PredictionReport predict_images(const Recipe& recipe, const PredictRequest& request);

// The class names to print, in label order: --classes FILE, else data.class_names, else those kept
// with the weights (a checkpoint's classes.txt, written by training, when `in_checkpoint`; else an
// exported file's metadata), else data.train's where that data is here (folders, shards, a list),
// else the numbers. `from` says which.
std::vector<std::string> prediction_class_names(const Recipe& recipe, const std::string& classes_file, const std::string& weights_file,
                                                bool in_checkpoint, std::string& from);

// RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled.
std::string csv_field(const std::string& text);

// path,class_1,label_1,probability_1,...,class_K,label_K,probability_K,error (RFC 4180 quoting).
std::string predictions_csv(const PredictionReport& report, int64_t top_k);
// One JSON object per file: {"path": ..., "top": [{"class": ..., "label": ..., "probability": ...}, ...]}
// or {"path": ..., "error": ...}.
std::string predictions_jsonl(const PredictionReport& report);
// "FILE: NAME 0.912, NAME 0.051, ..." or "FILE: unreadable (why)".
std::string prediction_line(const ImagePrediction& image, const std::vector<std::string>& class_names);

}  // namespace cvtrain
