// Per-class top-1 and the most frequent confusions, from an evaluation's counts: what a team looks
// at after the single top-1 figure (which classes fail, and what they are taken for). Torch-free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cvtrain {

// What the evaluator counts (summed over ranks): per true class, its samples and top-1 hits; and,
// where it is small enough to keep, the confusion matrix of true class (rows) against top-1
// prediction (columns, the model's outputs).
struct ClassCounts {
  std::vector<double> samples;
  std::vector<double> hits;
  int64_t outputs = 0;            // the confusion matrix's columns; 0: not kept
  std::vector<double> confusion;  // samples.size() x outputs, row-major
};

// The most confusion matrix cells a run keeps: ImageNet-1k's 1000 x 1000 (8 MB of doubles) fits,
// 21k classes would not.
constexpr int64_t kMostConfusionCells = 4 * 1000 * 1000;

struct Confusion {
  int64_t truth = 0, predicted = 0;
  int64_t count = 0;
};

struct ClassAccuracy {
  std::vector<std::string> names;         // per true class
  std::vector<std::string> output_names;  // per model output (the true class names, then "output N")
  std::vector<int64_t> samples, hits;
  std::vector<Confusion> confusions;  // the most frequent off-diagonal cells, largest first

  // "per_class": [{"class", "samples", "top1"}...], "confusions": [{"true", "predicted", "count"}...]
  // as the members of a JSON object (no braces), for eval.json.
  std::string json_members() const;
  // For the terminal: the `worst` classes by top-1 and the `confused` most frequent confusions.
  std::string lines(size_t worst = 5, size_t confused = 5) const;
};

// `names`: the true classes' names, one per row.
ClassAccuracy class_accuracy(const ClassCounts& counts, const std::vector<std::string>& names, size_t confusions_kept = 20);

}  // namespace cvtrain
