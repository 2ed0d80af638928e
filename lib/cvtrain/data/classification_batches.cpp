// A classification batch, sample by sample into one buffer (reused once its consumer lets go).
#include "cvtrain/data/classification_batches.h"

#include <ATen/ATen.h>

#include "cvtrain/core/rng.h"
#include "cvtrain/data/batch_erasing.h"
#include "cvtrain/data/sampler.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

ClassificationBatches::ClassificationBatches(const Dataset& dataset, LoaderOptions options)
    : dataset_(dataset), options_(std::move(options)), max_pooled_(static_cast<size_t>(options_.workers + options_.prefetch + 2)) {}

// A batch buffer nobody else holds any more, or a new one. Reuse matters: a 224px batch of 256
// is 38 MB, and fresh pages cost the kernel more than decoding some of the images. Pinned
// buffers are not pooled here: an asynchronous copy may still read one its consumer dropped, and
// CUDA's caching host allocator already reuses them safely.
at::Tensor ClassificationBatches::batch_buffer(int64_t count) {
  const int64_t size = options_.transform.image_size, channels = dataset_.channels();
  if (options_.normalize) {  // [B, C, H, W], laid out as the model takes it
    const auto layout = options_.normalize->channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
    return pooled_buffer({count, channels, size, size}, at::TensorOptions(at::kFloat).memory_format(layout));
  }
  const std::vector<int64_t> shape{count, size, size, channels};
  if (options_.pin_memory) return at::empty(shape, at::TensorOptions(at::kByte).pinned_memory(true));
  return pooled_buffer(shape, at::TensorOptions(at::kByte));
}

at::Tensor ClassificationBatches::pooled_buffer(const std::vector<int64_t>& shape, const at::TensorOptions& options) {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  for (const at::Tensor& buffer : pool_)
    if (buffer.use_count() == 1 && buffer.storage().use_count() == 1 && buffer.sizes() == at::IntArrayRef(shape) &&
        buffer.dtype() == options.dtype())
      return buffer;
  at::Tensor buffer = at::empty(shape, options);
  if (pool_.size() < max_pooled_) pool_.push_back(buffer);
  return buffer;
}

Batch ClassificationBatches::make(const std::vector<int64_t>& order, int64_t first, int64_t count) {
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
    const int64_t entry = order[static_cast<size_t>(first + i)];
    const auto index = static_cast<size_t>(dataset_index(entry));
    uint8_t* pixels = options_.normalize ? rendered.data() : images.data_ptr<uint8_t>() + i * sample_bytes;
    const size_t used = prepare_or_keep_sample(dataset_, index, options_.transform, options_.bad_samples, pixels, options_.timings,
                                               static_cast<uint64_t>(entry), options_.keep_encoded, kept);
    label_out[i] = dataset_.label(used);
    if (kept) {
      kept->slot = i;
      batch.encoded.push_back(std::move(*kept));
    }
    if (options_.normalize) finish_on_host(pixels, order, first + i, images.data_ptr<float>() + i * images.stride(0));
  }
  batch.images = images;
  batch.targets = labels;
  batch.first_sample = order.empty() ? 0 : order[static_cast<size_t>(first)];
  if (!options_.normalize) plan_erasing_of(batch, order, first, count);
  return batch;
}

namespace {
constexpr uint64_t kEraseStream = 0x6572617365ULL;
constexpr uint64_t kEraseFillStream = 0x66696c6cULL;
}  // namespace

// augment.random_erasing's boxes for the sample at `position` of the order, keyed by its entry like
// its crop, on a stream of their own.
std::vector<EraseBox> ClassificationBatches::erasing_of(const std::vector<int64_t>& order, int64_t position) const {
  const SampleTransform& t = options_.transform;
  if (!t.augment || t.augment->random_erasing.prob <= 0) return {};
  const auto entry = static_cast<uint64_t>(order[static_cast<size_t>(position)]);
  const int size = static_cast<int>(t.image_size);
  return plan_erasing(t.augment->random_erasing, size, size,
                      mix64(sample_key(t.seed, static_cast<uint64_t>(t.epoch), entry) ^ kEraseStream));
}

// The batch's boxes, for the device to fill with a generator keyed by the batch's first sample.
void ClassificationBatches::plan_erasing_of(Batch& batch, const std::vector<int64_t>& order, int64_t first, int64_t count) const {
  const SampleTransform& t = options_.transform;
  if (!t.augment || t.augment->random_erasing.prob <= 0) return;
  std::vector<std::vector<EraseBox>> boxes;
  for (int64_t i = 0; i < count; ++i) boxes.push_back(erasing_of(order, first + i));
  batch.erase_boxes = erase_box_tensor(boxes, options_.pin_memory);
  batch.erase_key = sample_key(t.seed ^ kEraseStream, static_cast<uint64_t>(t.epoch), static_cast<uint64_t>(batch.first_sample));
}

// On the host: the sample normalised into its slot and its boxes filled, with noise keyed by the
// sample (so the batch does not depend on which samples share it).
void ClassificationBatches::finish_on_host(const uint8_t* pixels, const std::vector<int64_t>& order, int64_t position, float* out) const {
  const SampleTransform& t = options_.transform;
  const int side = static_cast<int>(t.image_size), channels = static_cast<int>(dataset_.channels());
  normalize_sample(pixels, side, channels, *options_.normalize, out);
  const std::vector<EraseBox> boxes = erasing_of(order, position);
  if (boxes.empty()) return;
  const auto entry = static_cast<uint64_t>(order[static_cast<size_t>(position)]);
  erase_sample(out, side, channels, *options_.normalize, boxes,
               sample_key(t.seed ^ kEraseFillStream, static_cast<uint64_t>(t.epoch), entry));
}

}  // namespace cvtrain
