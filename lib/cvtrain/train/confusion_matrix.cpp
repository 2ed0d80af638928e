// index_add_ of the valid pixels' cells, not bincount: on CUDA bincount reads its size back to the
// host, a synchronisation per batch.
#include "cvtrain/train/confusion_matrix.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>

#include "cvtrain/comm/communicator.h"

namespace cvtrain {
namespace {

double nan_mean(const std::vector<double>& values) {
  double sum = 0;
  int64_t n = 0;
  for (double v : values)
    if (!std::isnan(v)) sum += v, ++n;
  return n ? sum / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

ConfusionMatrix::ConfusionMatrix(int64_t classes, int64_t ignore_index, const c10::Device& device)
    : classes_(classes),
      ignore_index_(ignore_index),
      cells_(at::zeros({classes * classes}, at::TensorOptions(device).dtype(at::kDouble))) {}

void ConfusionMatrix::add(const at::Tensor& predicted, const at::Tensor& truth) {
  const at::Tensor t = truth.to(at::kLong).reshape(-1), p = predicted.to(at::kLong).reshape(-1);
  const at::Tensor valid = t.ne(ignore_index_).logical_and(t.lt(classes_)).logical_and(t.ge(0));
  const at::Tensor cell = at::where(valid, t * classes_ + p, at::zeros_like(t));
  cells_.index_add_(0, cell, valid.to(at::kDouble));
}

SegmentationScores ConfusionMatrix::scores(Communicator* comm) {
  if (comm) comm->all_reduce_sum(cells_, "evaluation confusion-matrix all-reduce");
  return scores_of(counts());
}

at::Tensor ConfusionMatrix::counts() const { return cells_.view({classes_, classes_}).to(at::kCPU); }

SegmentationScores scores_of(const at::Tensor& counts) {
  const at::Tensor m = counts.to(at::kDouble).contiguous();
  const int64_t k = m.size(0);
  const auto* c = m.data_ptr<double>();
  SegmentationScores s;
  double hits = 0;
  for (int64_t i = 0; i < k; ++i) {
    double truth = 0, predicted = 0;
    for (int64_t j = 0; j < k; ++j) truth += c[i * k + j], predicted += c[j * k + i];
    const double intersection = c[i * k + i], united = truth + predicted - intersection;
    s.class_iou.push_back(united > 0 ? intersection / united : std::numeric_limits<double>::quiet_NaN());
    s.class_accuracy.push_back(truth > 0 ? intersection / truth : std::numeric_limits<double>::quiet_NaN());
    hits += intersection;
    s.labelled_pixels += truth;
  }
  s.miou = nan_mean(s.class_iou);
  s.mean_accuracy = nan_mean(s.class_accuracy);
  s.pixel_accuracy = s.labelled_pixels > 0 ? hits / s.labelled_pixels : std::numeric_limits<double>::quiet_NaN();
  return s;
}

}  // namespace cvtrain
