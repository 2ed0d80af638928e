// Synthetic samples: a labels-only dataset and a batch source that never leaves the device.
#include "cvtrain/data/synthetic.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "cvtrain/core/error.h"
#include "cvtrain/data/sampler.h"

namespace cvtrain {
namespace {

class SyntheticDataset : public Dataset {
 public:
  SyntheticDataset(int64_t samples, int channels, int64_t classes) : samples_(samples), channels_(channels), classes_(classes) {}
  size_t size() const override { return static_cast<size_t>(samples_); }
  int64_t label(size_t index) const override { return static_cast<int64_t>(index) % classes_; }
  int64_t num_classes() const override { return classes_; }
  int channels() const override { return channels_; }
  RawSample read(size_t index) const override {
    throw Error(fmt::format("synthetic sample {}: synthetic data exists only as device batches (no files to read)", index));
  }
  std::string describe(size_t index) const override { return fmt::format("synthetic #{}", index); }

 private:
  int64_t samples_;
  int channels_;
  int64_t classes_;
};

}  // namespace

std::unique_ptr<Dataset> make_synthetic_dataset(int64_t samples, int channels, int64_t classes) {
  return std::make_unique<SyntheticDataset>(samples, channels, classes);
}

SyntheticBatches::SyntheticBatches(const Dataset& dataset, std::vector<int64_t> order, int64_t batch_size, SyntheticShape shape,
                                   const FeedOptions& options, uint64_t seed)
    : order_(std::move(order)), batch_size_(batch_size), device_(options.device) {
  at::Generator generator = at::detail::createCPUGenerator(seed);
  // Made on the CPU with its own generator (the run's random stream is left alone), then moved once.
  const at::Tensor images = at::randn({batch_size, dataset.channels(), shape.height, shape.width}, generator, at::kFloat);
  images_ = images.to(at::TensorOptions(device_).dtype(options.dtype))
                .contiguous(options.channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous);
  // All the epoch's labels in one copy: a copy per batch from pageable memory would wait for the GPU
  // to finish the previous step, and the trainer would count that wait as waiting for data.
  const int64_t batches = static_cast<int64_t>(order_.size()) / batch_size_;
  std::vector<int64_t> labels(static_cast<size_t>(batches * batch_size_));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = dataset.label(static_cast<size_t>(dataset_index(order_[i])));
  labels_ = at::tensor(labels, at::kLong).to(device_);
  if (shape.masks)
    masks_ =
        at::randint(dataset.num_classes(), {batch_size, shape.height, shape.width}, generator, at::TensorOptions(at::kByte)).to(device_);
}

std::optional<DeviceBatch> SyntheticBatches::next() {
  if ((next_ + 1) * batch_size_ > labels_.size(0)) return std::nullopt;
  DeviceBatch batch;
  batch.images = images_;
  batch.targets = masks_.defined() ? masks_ : labels_.narrow(0, next_ * batch_size_, batch_size_);
  batch.first_sample = order_[static_cast<size_t>(next_ * batch_size_)];
  ++next_;
  arrived();  // nothing to copy: the batch is on the device already
  return batch;
}

}  // namespace cvtrain
