// Evaluation over a whole dataset: mean loss, top-1 and top-5 accuracy, no gradients.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <string>

#include "cvtrain/recipe/precision_policy.h"

namespace cvtrain {

class Classifier;
class Communicator;
class Dataset;
struct FeedOptions;
struct LoaderOptions;

struct EvalResult {
  double loss = 0;
  double top1 = 0;
  double top5 = 0;  // top-min(5, classes)
  int64_t samples = 0;
};

// Each rank evaluates its eval_share of the dataset; the sums are all-reduced, so every rank
// returns the same figures, computed over every sample exactly once.
EvalResult evaluate(Classifier& model, const Dataset& dataset, const LoaderOptions& loader, const FeedOptions& feed,
                    const PrecisionPolicy& precision, Communicator& comm);

}  // namespace cvtrain
