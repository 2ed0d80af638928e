// Host-to-device staging of batches. The CUDA path is compiled when LibTorch has CUDA and taken
// only when the device is a GPU, so a CPU-only machine runs the same code minus the copy.
#include "cvtrain/data/device_feeder.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "cvtrain/build_config.h"
#include "cvtrain/core/error.h"
#include "cvtrain/data/batch_erasing.h"
#include "cvtrain/data/batch_loader.h"
#include "cvtrain/data/device_decode.h"

#if CVTRAIN_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace cvtrain {

#if CVTRAIN_WITH_CUDA
struct DeviceFeeder::CopyStream {
  explicit CopyStream(c10::DeviceIndex device) : stream(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device)) {}
  c10::cuda::CUDAStream stream;

  // Copies (and decodes) on the side stream; the compute stream waits for it on the device, never the host.
  Batch to_device(const Batch& host, const c10::Device& device, DeviceDecode* decode) {
    const c10::cuda::CUDAStream compute = c10::cuda::getCurrentCUDAStream(device.index());
    Batch out{};
    {
      c10::cuda::CUDAStreamGuard guard(stream);
      // A batch nvJPEG decodes whole has nothing on the host worth copying.
      const bool all_encoded = static_cast<int64_t>(host.encoded.size()) == host.images.size(0);
      out.images = all_encoded ? at::empty(host.images.sizes(), at::TensorOptions(device).dtype(at::kByte))
                               : host.images.to(device, /*non_blocking=*/true);
      out.labels = host.labels.to(device, /*non_blocking=*/true);
      if (decode) decode->render(host.encoded, out.images, out.labels);
    }
    at::cuda::CUDAEvent copied;
    copied.record(stream);
    copied.block(compute);
    // Memory allocated on the copy stream is used on the compute stream: tell the caching allocator.
    out.images.record_stream(compute.unwrap());
    out.labels.record_stream(compute.unwrap());
    out.first_sample = host.first_sample;
    out.erase_boxes = host.erase_boxes;  // a few bytes: erase_batch copies them behind the images
    out.erase_key = host.erase_key;
    return out;
  }
};
#else
struct DeviceFeeder::CopyStream {};
#endif

bool wants_pinned_memory(const c10::Device& device) {
#if CVTRAIN_WITH_CUDA
  return device.is_cuda();
#else
  return false;
#endif
}

DeviceFeeder::DeviceFeeder(BatchLoader& loader, FeedOptions options, DeviceDecode* decode)
    : loader_(loader), options_(std::move(options)), decode_(decode) {
  if (options_.mean.size() != options_.std.size() || options_.mean.empty())
    throw Error(fmt::format("data.mean has {} values and data.std {}", options_.mean.size(), options_.std.size()));
  const auto c = static_cast<int64_t>(options_.mean.size());
  const auto on_device = at::TensorOptions(options_.device).dtype(at::kFloat);
  mean_ = at::tensor(options_.mean, at::kDouble).mul(255).to(on_device).view({1, c, 1, 1});
  inv_std_ = at::tensor(options_.std, at::kDouble).mul(255).reciprocal().to(on_device).view({1, c, 1, 1});
  if (options_.device.is_cuda()) {
#if CVTRAIN_WITH_CUDA
    copy_ = std::make_unique<CopyStream>(options_.device.index());
#else
    throw Error("this build of cvtrain has no CUDA support");
#endif
  }
}

DeviceFeeder::~DeviceFeeder() = default;

std::optional<DeviceBatch> DeviceFeeder::next() {
  std::optional<Batch> host = loader_.next();
  if (!host) return std::nullopt;
  arrived();
  if (!host->encoded.empty() && !decode_)
    throw Error(fmt::format("the loader left {} samples encoded for a device decoder, and this feeder has none", host->encoded.size()));
  if (host->images.size(3) != mean_.size(1))
    throw Error(fmt::format("data.mean and data.std have {} values but the data has {} channel(s)", mean_.size(1),
                            host->images.size(3)));
#if CVTRAIN_WITH_CUDA
  if (copy_) *host = copy_->to_device(*host, options_.device, decode_);
#endif
  if (!copy_ && decode_) decode_->render(host->encoded, host->images, host->labels);
  // NHWC uint8 viewed as NCHW is channels_last already: one pass converts and lays out.
  const auto layout = options_.channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  at::Tensor images = host->images.permute({0, 3, 1, 2}).to(at::TensorOptions().dtype(at::kFloat), false, false, layout);
  images.sub_(mean_).mul_(inv_std_);
  erase_batch(images, host->erase_boxes, options_.erase_mode, host->erase_key);  // after normalising, as timm erases
  if (options_.dtype != at::kFloat) images = images.to(options_.dtype);
  return DeviceBatch{images, host->labels, host->first_sample};
}

}  // namespace cvtrain
