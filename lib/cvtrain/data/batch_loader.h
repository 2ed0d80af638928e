// Batches for the training loop: worker threads make whole batches ahead of the consumer (each
// worker one, plus `prefetch` finished ones) and hand them over in order. What a batch holds is a
// BatchMaker's (batch_maker.h); for classification, uint8 NHWC tensors, in pinned memory when asked,
// ready for an asynchronous copy (see DeviceFeeder), or, for a model on the CPU, normalised and
// erased float tensors (data/host_normalize.h).
#pragma once

#include <ATen/core/Tensor.h>

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "cvtrain/data/batch_maker.h"
#include "cvtrain/data/dataset.h"
#include "cvtrain/data/host_normalize.h"
#include "cvtrain/data/sample_pipeline.h"
#include "cvtrain/data/transforms.h"

namespace cvtrain {

struct LoaderOptions {
  int64_t batch_size = 1;
  bool drop_last = false;
  int64_t workers = 0;   // 0: batches are made on the caller's thread
  int64_t prefetch = 2;  // finished batches that may wait for the consumer, beyond one per worker
  bool pin_memory = false;  // page-locked batches, for asynchronous host-to-device copies
  SampleTransform transform;
  BadSamples* bad_samples = nullptr;  // null: an unusable sample is an error
  InputTimings* timings = nullptr;    // where the workers' read and decode times are added, if anywhere
  KeepEncoded keep_encoded;           // JPEGs it accepts are left encoded in Batch::encoded (data.decoder nvjpeg)
  std::optional<HostNormalize> normalize;  // set: float batches, normalised and erased by the workers
};

class BatchLoader {
 public:
  // `order` lists the dataset indices of this pass in the order they are consumed. Classification:
  // images and their labels, as `options` say (classification_batches.h).
  BatchLoader(const Dataset& dataset, std::vector<int64_t> order, LoaderOptions options);
  // Batches made by `maker`; of `options`, the batch size, drop_last, workers and prefetch count.
  BatchLoader(std::shared_ptr<BatchMaker> maker, std::vector<int64_t> order, LoaderOptions options);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  int64_t num_batches() const { return num_batches_; }
  // The next batch in order, or nullopt after the last; rethrows a worker's error.
  std::optional<Batch> next();

 private:
  void worker_loop(int64_t worker);
  void stop_workers();
  Batch make_batch(int64_t batch_index);

  std::shared_ptr<BatchMaker> maker_;
  std::vector<int64_t> order_;
  LoaderOptions options_;
  int64_t num_batches_ = 0;
  int64_t next_batch_ = 0;

  std::mutex mutex_;
  std::condition_variable ready_;   // a batch was finished (or a worker failed)
  std::condition_variable room_;    // the consumer took a batch
  std::map<int64_t, Batch> finished_;
  std::exception_ptr failure_;
  int64_t failed_batch_ = -1;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace cvtrain
