// Batch assembly: worker w makes batches w, w+W, w+2W, ... so any number of workers produces
// exactly the same batches (every random decision is keyed by the sample, not by the thread).
#include "cvtrain/data/batch_loader.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "cvtrain/core/error.h"
#include "cvtrain/core/rng.h"
#include "cvtrain/data/batch_erasing.h"
#include "cvtrain/data/sampler.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

BatchLoader::BatchLoader(const Dataset& dataset, std::vector<int64_t> order, LoaderOptions options)
    : dataset_(dataset), order_(std::move(order)), options_(std::move(options)) {
  const auto samples = static_cast<int64_t>(order_.size());
  const int64_t b = options_.batch_size;
  num_batches_ = options_.drop_last ? samples / b : (samples + b - 1) / b;
  max_pooled_ = static_cast<size_t>(options_.workers + options_.prefetch + 2);
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

// A batch buffer nobody else holds any more, or a new one. Reuse matters: a 224px batch of 256
// is 38 MB, and fresh pages cost the kernel more than decoding some of the images. Pinned
// buffers are not pooled here: an asynchronous copy may still read one its consumer dropped, and
// CUDA's caching host allocator already reuses them safely.
at::Tensor BatchLoader::batch_buffer(int64_t count) {
  const int64_t size = options_.transform.image_size;
  const std::vector<int64_t> shape{count, size, size, dataset_.channels()};
  if (options_.pin_memory) return at::empty(shape, at::TensorOptions(at::kByte).pinned_memory(true));
  std::lock_guard<std::mutex> lock(pool_mutex_);
  for (const at::Tensor& buffer : pool_)
    if (buffer.use_count() == 1 && buffer.storage().use_count() == 1 && buffer.sizes() == at::IntArrayRef(shape)) return buffer;
  at::Tensor buffer = at::empty(shape, at::kByte);
  if (pool_.size() < max_pooled_) pool_.push_back(buffer);
  return buffer;
}

Batch BatchLoader::make_batch(int64_t batch_index) {
  const int64_t first = batch_index * options_.batch_size;
  const int64_t count = std::min<int64_t>(options_.batch_size, static_cast<int64_t>(order_.size()) - first);
  at::Tensor images = batch_buffer(count);
  at::Tensor labels = at::empty({count}, at::TensorOptions(at::kLong).pinned_memory(options_.pin_memory));
  uint8_t* out = images.data_ptr<uint8_t>();
  int64_t* label_out = labels.data_ptr<int64_t>();
  const auto sample_bytes = static_cast<size_t>(images.stride(0));
  Batch batch;
  std::optional<EncodedSample> kept;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t entry = order_[static_cast<size_t>(first + i)];
    const auto index = static_cast<size_t>(dataset_index(entry));
    const size_t used = prepare_or_keep_sample(dataset_, index, options_.transform, options_.bad_samples, out + i * sample_bytes,
                                               options_.timings, static_cast<uint64_t>(entry), options_.keep_encoded, kept);
    label_out[i] = dataset_.label(used);
    if (kept) {
      kept->slot = i;
      batch.encoded.push_back(std::move(*kept));
    }
  }
  batch.images = images;
  batch.labels = labels;
  batch.first_sample = order_.empty() ? 0 : order_[static_cast<size_t>(first)];
  plan_erasing_of(batch, first, count);
  return batch;
}

// augment.random_erasing's boxes, keyed by each sample's entry like its crop, on a stream of their own.
void BatchLoader::plan_erasing_of(Batch& batch, int64_t first, int64_t count) const {
  const SampleTransform& t = options_.transform;
  if (!t.augment || t.augment->random_erasing.prob <= 0) return;
  constexpr uint64_t kEraseStream = 0x6572617365ULL;
  const int size = static_cast<int>(t.image_size);
  std::vector<std::vector<EraseBox>> boxes;
  for (int64_t i = 0; i < count; ++i) {
    const auto entry = static_cast<uint64_t>(order_[static_cast<size_t>(first + i)]);
    boxes.push_back(plan_erasing(t.augment->random_erasing, size, size, mix64(sample_key(t.seed, static_cast<uint64_t>(t.epoch), entry) ^ kEraseStream)));
  }
  batch.erase_boxes = erase_box_tensor(boxes, options_.pin_memory);
  batch.erase_key = sample_key(t.seed ^ kEraseStream, static_cast<uint64_t>(t.epoch), static_cast<uint64_t>(batch.first_sample));
}

void BatchLoader::worker_loop(int64_t worker) {
  for (int64_t b = worker; b < num_batches_; b += options_.workers) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // Every worker has a batch of its own in hand, and `prefetch` finished ones may wait beyond
      // those: a window of only `prefetch` batches would leave all but `prefetch` workers idle.
      room_.wait(lock, [&] { return stopping_ || b < next_batch_ + options_.workers + options_.prefetch; });
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
