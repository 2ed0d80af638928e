// `cvtrain eval`: top-1, top-5 and loss of given weights on data.val, as timm's validate.py — a
// checkpoint's raw or averaged weights, or a safetensors file with torchvision/timm key names — at
// the recipe's resolution and data.eval_crop_fraction, on any number of ranks, every sample once.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "cvtrain/train/eval_report.h"

namespace cvtrain {

class Classifier;
struct RankInfo;
struct Recipe;

struct EvalRequest {
  std::string checkpoint;  // a checkpoint folder, or a run folder (its newest complete checkpoint)
  std::string weights;     // a safetensors file with the model's key names (torchvision / timm)
  bool ema = false;        // the checkpoint's train.ema average instead of its raw weights
  int64_t batch = 0;       // images per rank and forward pass; 0: train.micro_batch (64 when auto)
};

// The weights file a request names, and its checkpoint's step (-1 for a weights file): the
// checkpoint's (or, with `ema`, its weight average), else `weights`, else model.pretrained.
// RecipeError when it names none.
std::pair<std::string, int64_t> choose_weights(const Recipe& recipe, const EvalRequest& request);
// Every tensor of `model` from `file`, strictly: a missing or unexpected key, or a head for
// another class count (which would score noise), is an Error naming the file and the model
// section. A ViT's position embedding is resized to model.image_size (logged when `log`).
void load_for_evaluation(Classifier& model, const std::string& file, const Recipe& recipe, bool log);
// Images per forward pass: the request's, else train.micro_batch (64 when auto).
int64_t batch_of(const Recipe& recipe, const EvalRequest& request);

// Collective: every rank of the job calls it and gets the same report. Throws Error naming the
// file when the weights do not fit the recipe's model (missing or unexpected keys, another class
// count); RecipeError when there is nothing to evaluate or no data.val.
EvalReport evaluate_weights(const Recipe& recipe, const RankInfo& rank, const EvalRequest& request);

}  // namespace cvtrain
