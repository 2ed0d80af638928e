// Evaluation over a whole dataset: mean loss, top-1 and top-5 accuracy, per-class counts, no gradients.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cvtrain/observe/class_accuracy.h"
#include "cvtrain/recipe/precision_policy.h"

namespace cvtrain {

class BadSamples;
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
  ClassCounts per_class;  // samples and top-1 hits of each class; the confusion matrix where it fits
  // The task's scores by their metrics.jsonl names, the main one first: top1 and top5 here;
  // miou, pixel_acc and macc for segmentation (train/segmentation_task.h).
  std::vector<std::pair<std::string, double>> scores;
  std::vector<double> class_iou;  // segmentation: each class's IoU (NaN for a class neither seen nor predicted)
};

// Each rank evaluates its eval_share of the dataset; the sums are all-reduced, so every rank
// returns the same figures, computed over every sample exactly once. `outputs`: the model's
// (model.num_classes), the confusion matrix's columns.
EvalResult evaluate(Classifier& model, const Dataset& dataset, const LoaderOptions& loader, const FeedOptions& feed,
                    const PrecisionPolicy& precision, Communicator& comm, int64_t outputs);

// The validation samples that could not be read, summed over the ranks (each saw only its share).
// Collective.
int64_t unusable_over_ranks(const BadSamples& bad, Communicator& comm, const c10::Device& device);

}  // namespace cvtrain
