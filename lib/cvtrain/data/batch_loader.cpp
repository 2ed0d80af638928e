// Batch assembly: worker w makes batches w, w+W, w+2W, ... so any number of workers produces
// exactly the same batches (every random decision is keyed by the sample, not by the thread).
#include "cvtrain/data/batch_loader.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <pthread.h>

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
  const int64_t size = options_.transform.image_size, channels = dataset_.channels();
  if (options_.normalize) {  // [B, C, H, W], laid out as the model takes it
    const auto layout = options_.normalize->channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
    return pooled_buffer({count, channels, size, size}, at::TensorOptions(at::kFloat).memory_format(layout));
  }
  const std::vector<int64_t> shape{count, size, size, channels};
  if (options_.pin_memory) return at::empty(shape, at::TensorOptions(at::kByte).pinned_memory(true));
  return pooled_buffer(shape, at::TensorOptions(at::kByte));
}

at::Tensor BatchLoader::pooled_buffer(const std::vector<int64_t>& shape, const at::TensorOptions& options) {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  for (const at::Tensor& buffer : pool_)
    if (buffer.use_count() == 1 && buffer.storage().use_count() == 1 && buffer.sizes() == at::IntArrayRef(shape) &&
        buffer.dtype() == options.dtype())
      return buffer;
  at::Tensor buffer = at::empty(shape, options);
  if (pool_.size() < max_pooled_) pool_.push_back(buffer);
  return buffer;
}

Batch BatchLoader::make_batch(int64_t batch_index) {
  const int64_t first = batch_index * options_.batch_size;
  const int64_t count = std::min<int64_t>(options_.batch_size, static_cast<int64_t>(order_.size()) - first);
  at::Tensor images = batch_buffer(count);
  at::Tensor labels = at::empty({count}, at::TensorOptions(at::kLong).pinned_memory(options_.pin_memory));
  int64_t* label_out = labels.data_ptr<int64_t>();
  const int64_t side = options_.transform.image_size;
  const auto sample_bytes = static_cast<size_t>(side * side * dataset_.channels());
  // Normalising workers render each sample into bytes of their own first (a few hundred KB, reused).
  thread_local std::vector<uint8_t> rendered;
  if (options_.normalize) rendered.resize(sample_bytes);
  Batch batch;
  std::optional<EncodedSample> kept;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t entry = order_[static_cast<size_t>(first + i)];
    const auto index = static_cast<size_t>(dataset_index(entry));
    uint8_t* pixels = options_.normalize ? rendered.data() : images.data_ptr<uint8_t>() + i * sample_bytes;
    const size_t used = prepare_or_keep_sample(dataset_, index, options_.transform, options_.bad_samples, pixels, options_.timings,
                                               static_cast<uint64_t>(entry), options_.keep_encoded, kept);
    label_out[i] = dataset_.label(used);
    if (kept) {
      kept->slot = i;
      batch.encoded.push_back(std::move(*kept));
    }
    if (options_.normalize) finish_on_host(pixels, first + i, images.data_ptr<float>() + i * images.stride(0));
  }
  batch.images = images;
  batch.labels = labels;
  batch.first_sample = order_.empty() ? 0 : order_[static_cast<size_t>(first)];
  if (!options_.normalize) plan_erasing_of(batch, first, count);
  return batch;
}

namespace {
constexpr uint64_t kEraseStream = 0x6572617365ULL;
constexpr uint64_t kEraseFillStream = 0x66696c6cULL;
}  // namespace

// augment.random_erasing's boxes for the sample at `position` of the order, keyed by its entry like
// its crop, on a stream of their own.
std::vector<EraseBox> BatchLoader::erasing_of(int64_t position) const {
  const SampleTransform& t = options_.transform;
  if (!t.augment || t.augment->random_erasing.prob <= 0) return {};
  const auto entry = static_cast<uint64_t>(order_[static_cast<size_t>(position)]);
  const int size = static_cast<int>(t.image_size);
  return plan_erasing(t.augment->random_erasing, size, size,
                      mix64(sample_key(t.seed, static_cast<uint64_t>(t.epoch), entry) ^ kEraseStream));
}

// The batch's boxes, for the device to fill with a generator keyed by the batch's first sample.
void BatchLoader::plan_erasing_of(Batch& batch, int64_t first, int64_t count) const {
  const SampleTransform& t = options_.transform;
  if (!t.augment || t.augment->random_erasing.prob <= 0) return;
  std::vector<std::vector<EraseBox>> boxes;
  for (int64_t i = 0; i < count; ++i) boxes.push_back(erasing_of(first + i));
  batch.erase_boxes = erase_box_tensor(boxes, options_.pin_memory);
  batch.erase_key = sample_key(t.seed ^ kEraseStream, static_cast<uint64_t>(t.epoch), static_cast<uint64_t>(batch.first_sample));
}

// On the host: the sample normalised into its slot and its boxes filled, with noise keyed by the
// sample (so the batch does not depend on which samples share it).
void BatchLoader::finish_on_host(const uint8_t* pixels, int64_t position, float* out) const {
  const SampleTransform& t = options_.transform;
  const int side = static_cast<int>(t.image_size), channels = static_cast<int>(dataset_.channels());
  normalize_sample(pixels, side, channels, *options_.normalize, out);
  const std::vector<EraseBox> boxes = erasing_of(position);
  if (boxes.empty()) return;
  const auto entry = static_cast<uint64_t>(order_[static_cast<size_t>(position)]);
  erase_sample(out, side, channels, *options_.normalize, boxes,
               sample_key(t.seed ^ kEraseFillStream, static_cast<uint64_t>(t.epoch), entry));
}

void BatchLoader::worker_loop(int64_t worker) {
  // Named for top, perf and gdb (15 characters at most): scripts/profile_data.sh picks them out.
  pthread_setname_np(pthread_self(), fmt::format("cvtrain-data:{}", worker % 100).c_str());
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
