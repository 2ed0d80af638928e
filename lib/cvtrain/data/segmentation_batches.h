// Segmentation's batches: training crops of image and mask through the joint transforms
// (joint_transforms.h), or whole validation images (fitted within augment.scale, as mmseg's test
// pipeline resizes them) with their masks as stored, for a metric at the original resolution.
#pragma once

#include "cvtrain/data/batch_maker.h"
#include "cvtrain/data/joint_transforms.h"
#include "cvtrain/data/segmentation_dataset.h"

namespace cvtrain {

struct SegmentationView {
  bool training = true;  // crops by `augment`; else whole images, their masks untouched
  JointAugment augment;  // training; its scale_long/short also fit evaluation images (ratio 1)
  uint64_t seed = 0;
  int64_t epoch = 0;
};

class SegmentationBatches : public BatchMaker {
 public:
  // `timings`: where read and decode times are added (the profiler's storage-or-decode verdict), if anywhere.
  SegmentationBatches(const SegmentationDataset& dataset, SegmentationView view, InputTimings* timings = nullptr);
  // Training: uint8 images [B, crop_h, crop_w, 3] and masks [B, crop_h, crop_w]. Evaluation: the
  // samples must share a size (a batch of one always does); images [B, h, w, 3] as fitted, masks
  // [B, H, W] as stored. A mask that does not fit its image, or ids that are no class, stop the
  // run with an Error naming the file.
  Batch make(const std::vector<int64_t>& order, int64_t first, int64_t count) override;

 private:
  Batch make_training(const std::vector<int64_t>& order, int64_t first, int64_t count);
  Batch make_evaluation(const std::vector<int64_t>& order, int64_t first, int64_t count);
  std::pair<Image, LabelMask> load(size_t index);

  const SegmentationDataset& dataset_;
  SegmentationView view_;
  InputTimings* timings_;
};

// An evaluation image's size after fitting within `augment`'s scale (as is without one).
ImageSize evaluation_size(ImageSize source, const JointAugment& augment);
// `image` resized to `fitted` (Pillow's bilinear, antialiased when it shrinks; copied when equal)
// into `out`, fitted.height x fitted.width x channels bytes.
void write_fitted(const Image& image, ImageSize fitted, uint8_t* out);

}  // namespace cvtrain
