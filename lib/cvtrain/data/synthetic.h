// data.format: synthetic — random images made once on the device and labels by sample index, no
// files and no decoding: for measuring what the model, precision and strategy cost on their own.
#pragma once

#include <memory>
#include <vector>

#include "cvtrain/data/dataset.h"
#include "cvtrain/data/device_feeder.h"

namespace cvtrain {

// An ImageNet-sized epoch unless data.max_samples says otherwise.
inline constexpr int64_t kSyntheticSamples = 1281167;

// Labels only (sample i has class i mod `classes`); read() is an Error, as there are no files.
std::unique_ptr<Dataset> make_synthetic_dataset(int64_t samples, int channels, int64_t classes);

// What a synthetic batch holds: images of height x width, and with `masks` (task: segmentation)
// a random uint8 mask of class ids per image instead of a label.
struct SyntheticShape {
  int64_t height = 224, width = 224;
  bool masks = false;
};

// Full batches of `batch_size` over `order`: one random normalised image tensor [B, C, H, W] made
// on the device at construction and reused, with each batch's own labels (all copied there at
// construction too, so that next() never waits for the GPU), or one random mask tensor [B, H, W].
class SyntheticBatches : public BatchSource {
 public:
  SyntheticBatches(const Dataset& dataset, std::vector<int64_t> order, int64_t batch_size, SyntheticShape shape, const FeedOptions& options,
                   uint64_t seed);
  std::optional<DeviceBatch> next() override;

 private:
  std::vector<int64_t> order_;
  int64_t batch_size_;
  int64_t next_ = 0;
  at::Tensor images_;
  at::Tensor labels_;  // of the full batches in `order`, on the device
  at::Tensor masks_;   // [B, H, W] class ids for every batch, with SyntheticShape::masks
  c10::Device device_;
};

}  // namespace cvtrain
