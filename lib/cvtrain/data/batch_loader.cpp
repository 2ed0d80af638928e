// Batch assembly: worker w makes batches w, w+W, w+2W, ... so any number of workers produces
// exactly the same batches (every random decision is keyed by the sample, not by the thread).
#include "cvtrain/data/batch_loader.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "cvtrain/core/error.h"

namespace cvtrain {

BatchLoader::BatchLoader(const Dataset& dataset, std::vector<int64_t> order, LoaderOptions options)
    : dataset_(dataset), order_(std::move(order)), options_(std::move(options)) {
  const auto samples = static_cast<int64_t>(order_.size());
  const int64_t b = options_.batch_size;
  num_batches_ = options_.drop_last ? samples / b : (samples + b - 1) / b;
  if (static_cast<size_t>(dataset_.channels()) != options_.mean.size())
    throw Error(fmt::format("data.mean and data.std have {} values but the data has {} channel(s)", options_.mean.size(),
                            dataset_.channels()));
  for (int64_t w = 0; w < options_.workers; ++w) workers_.emplace_back(&BatchLoader::worker_loop, this, w);
}

BatchLoader::~BatchLoader() { stop_workers(); }

void BatchLoader::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  room_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

Batch BatchLoader::make_batch(int64_t batch_index) const {
  const int64_t first = batch_index * options_.batch_size;
  const int64_t count = std::min<int64_t>(options_.batch_size, static_cast<int64_t>(order_.size()) - first);
  const int64_t size = options_.transform.image_size;
  const int channels = dataset_.channels();
  at::Tensor images = at::empty({count, channels, size, size}, at::kFloat);
  at::Tensor labels = at::empty({count}, at::kLong);
  float* out = images.data_ptr<float>();
  int64_t* label_out = labels.data_ptr<int64_t>();
  const int64_t plane = size * size;
  for (int64_t i = 0; i < count; ++i) {
    const auto index = static_cast<size_t>(order_[static_cast<size_t>(first + i)]);
    const Image image = transform_sample(dataset_.load(index), options_.transform, index);
    // HWC uint8 -> CHW float, normalised in the same pass.
    for (int c = 0; c < channels; ++c) {
      const float scale = static_cast<float>(1.0 / (255.0 * options_.std[c]));
      const float shift = static_cast<float>(options_.mean[c] / options_.std[c]);
      float* dst = out + (i * channels + c) * plane;
      for (int64_t p = 0; p < plane; ++p) dst[p] = image.pixels[p * channels + c] * scale - shift;
    }
    label_out[i] = dataset_.label(index);
  }
  return Batch{images, labels};
}

void BatchLoader::worker_loop(int64_t worker) {
  for (int64_t b = worker; b < num_batches_; b += options_.workers) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      room_.wait(lock, [&] { return stopping_ || b < next_batch_ + options_.prefetch; });
      if (stopping_) return;
    }
    try {
      Batch batch = make_batch(b);
      std::lock_guard<std::mutex> lock(mutex_);
      finished_.emplace(b, std::move(batch));
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!failure_ || b < failed_batch_) {
        failure_ = std::current_exception();
        failed_batch_ = b;
      }
    }
    ready_.notify_all();
  }
}

std::optional<Batch> BatchLoader::next() {
  if (next_batch_ >= num_batches_) return std::nullopt;
  if (workers_.empty()) return make_batch(next_batch_++);
  std::unique_lock<std::mutex> lock(mutex_);
  // Batches before a failed one are still delivered: the error surfaces at its own batch.
  ready_.wait(lock, [&] { return finished_.count(next_batch_) || (failure_ && failed_batch_ == next_batch_); });
  if (!finished_.count(next_batch_)) std::rethrow_exception(failure_);
  Batch batch = std::move(finished_.at(next_batch_));
  finished_.erase(next_batch_++);
  lock.unlock();
  room_.notify_all();
  return batch;
}

}  // namespace cvtrain
