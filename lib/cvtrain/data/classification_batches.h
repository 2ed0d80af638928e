// Classification's batches: each sample read, decoded, cropped and flipped as the transform says
// (sample_pipeline.h), with its class label; unusable samples replaced and counted, JPEGs left
// encoded for nvJPEG where asked, random-erasing boxes planned, normalised on the host for a CPU model.
#pragma once

#include <mutex>
#include <vector>

#include "cvtrain/data/batch_loader.h"
#include "cvtrain/data/erasing_plan.h"

namespace cvtrain {

class ClassificationBatches : public BatchMaker {
 public:
  ClassificationBatches(const Dataset& dataset, LoaderOptions options);
  Batch make(const std::vector<int64_t>& order, int64_t first, int64_t count) override;

 private:
  std::vector<EraseBox> erasing_of(const std::vector<int64_t>& order, int64_t position) const;
  void plan_erasing_of(Batch& batch, const std::vector<int64_t>& order, int64_t first, int64_t count) const;
  void finish_on_host(const uint8_t* pixels, const std::vector<int64_t>& order, int64_t position, float* out) const;
  at::Tensor batch_buffer(int64_t count);
  at::Tensor pooled_buffer(const std::vector<int64_t>& shape, const at::TensorOptions& options);

  const Dataset& dataset_;
  LoaderOptions options_;
  std::mutex pool_mutex_;
  std::vector<at::Tensor> pool_;  // image buffers, handed out again once the consumer let go
  size_t max_pooled_ = 0;         // the window of batches in the making, plus two the consumer holds
};

}  // namespace cvtrain
