// Segmentation's metric: a confusion matrix of true class x predicted class over every labelled
// pixel, accumulated on the device (no host synchronisation per batch) and summed across ranks;
// IoU per class, mIoU, pixel accuracy and mean class accuracy from it, as mmseg's IoUMetric.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <vector>

namespace cvtrain {

class Communicator;

struct SegmentationScores {
  std::vector<double> class_iou;       // intersection / union of each class; NaN where neither seen nor predicted
  std::vector<double> class_accuracy;  // hits / pixels of each class; NaN where the class has no pixel
  double miou = 0;                     // the mean of the IoUs that are numbers (mmseg's nanmean)
  double pixel_accuracy = 0;           // hits / labelled pixels (mmseg's aAcc)
  double mean_accuracy = 0;            // the mean of the class accuracies that are numbers (mmseg's mAcc)
  double labelled_pixels = 0;
};

class ConfusionMatrix {
 public:
  ConfusionMatrix(int64_t classes, int64_t ignore_index, const c10::Device& device);
  // `predicted` int64 [B, H, W] class ids, `truth` [B, H, W] ids (any integer type); pixels whose
  // truth is ignore_index are left out.
  void add(const at::Tensor& predicted, const at::Tensor& truth);
  // Sums the matrix over the ranks (collective when `comm` is given) and reads the scores.
  SegmentationScores scores(Communicator* comm);
  // The [classes, classes] counts (row: truth, column: prediction), on the host.
  at::Tensor counts() const;

 private:
  int64_t classes_, ignore_index_;
  at::Tensor cells_;  // double [classes * classes]: sums of ones are exact in any order
};

// The scores of a [classes, classes] matrix of counts (row: truth).
SegmentationScores scores_of(const at::Tensor& counts);

}  // namespace cvtrain
