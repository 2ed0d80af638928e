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
#include "cvtrain/data/prefetch_thread.h"

#if CVTRAIN_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace cvtrain {

#if CVTRAIN_WITH_CUDA
struct DeviceFeeder::CopyStream {
  explicit CopyStream(c10::DeviceIndex device) : stream(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device)) {}
  c10::cuda::CUDAStream stream;

  // Copies (and decodes) on the side stream, then records `ready` there.
  Batch stage(const Batch& host, const c10::Device& device, DeviceDecode* decode, at::cuda::CUDAEvent& ready) {
    Batch out{};
    {
      c10::cuda::CUDAStreamGuard guard(stream);
      // A batch nvJPEG decodes whole has nothing on the host worth copying.
      const bool all_encoded = static_cast<int64_t>(host.encoded.size()) == host.images.size(0);
      out.images = all_encoded ? at::empty(host.images.sizes(), at::TensorOptions(device).dtype(at::kByte))
                               : host.images.to(device, /*non_blocking=*/true);
      out.targets = host.targets.to(device, /*non_blocking=*/true);
      if (decode) decode->render(host.encoded, out.images, out.targets);
    }
    ready.record(stream);
    out.first_sample = host.first_sample;
    out.erase_boxes = host.erase_boxes;  // a few bytes: erase_batch copies them behind the images
    out.erase_key = host.erase_key;
    return out;
  }

  // On the consumer's thread: its stream waits for `ready` on the device, never the host, and the
  // caching allocator learns that memory allocated on the copy stream is used there.
  static void hand_over(const Batch& batch, at::cuda::CUDAEvent& ready, const c10::Device& device) {
    const c10::cuda::CUDAStream compute = c10::cuda::getCurrentCUDAStream(device.index());
    ready.block(compute);
    batch.images.record_stream(compute.unwrap());
    batch.targets.record_stream(compute.unwrap());
  }

  Batch to_device(const Batch& host, const c10::Device& device, DeviceDecode* decode) {
    at::cuda::CUDAEvent ready;
    Batch out = stage(host, device, decode, ready);
    hand_over(out, ready, device);
    return out;
  }
};

// A batch staged ahead by the decode thread, with the event its copy and decode end in.
struct StagedBatch {
  Batch batch;
  std::shared_ptr<at::cuda::CUDAEvent> ready;
};
#else
struct DeviceFeeder::CopyStream {};
struct StagedBatch {
  Batch batch;
};
#endif

// With a device decoder, the loader's batches are copied, decoded and rendered one batch ahead on a
// thread of its own: nvJPEG's host work and the render's launches stay off the training thread.
struct DeviceFeeder::DecodeAhead {
  explicit DecodeAhead(DeviceFeeder& feeder)
      : thread([&feeder] { return feeder.stage_next(/*on_caller_thread=*/false); }, /*depth=*/1, [device = feeder.options_.device] {
#if CVTRAIN_WITH_CUDA
          if (device.is_cuda()) c10::cuda::set_device(device.index());  // nvJPEG decodes on the thread's current device
#endif
        }) {}
  PrefetchThread<StagedBatch> thread;
};

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
  if (decode_) ahead_ = std::make_unique<DecodeAhead>(*this);
}

DeviceFeeder::~DeviceFeeder() = default;

// The loader's next batch, checked, copied and decoded: on the caller's thread (which has then
// waited for data until the loader answered), or on the decode thread.
std::optional<StagedBatch> DeviceFeeder::stage_next(bool on_caller_thread) {
  std::optional<Batch> host = loader_.next();
  if (!host) return std::nullopt;
  if (on_caller_thread) arrived();
  if (!host->encoded.empty() && !decode_)
    throw Error(fmt::format("the loader left {} samples encoded for a device decoder, and this feeder has none", host->encoded.size()));
  const int64_t channels = host->images.scalar_type() == at::kByte ? host->images.size(3) : host->images.size(1);
  if (channels != mean_.size(1))
    throw Error(fmt::format("data.mean and data.std have {} values but the data has {} channel(s)", mean_.size(1), channels));
  StagedBatch staged;
#if CVTRAIN_WITH_CUDA
  if (copy_) {
    staged.ready = std::make_shared<at::cuda::CUDAEvent>();
    staged.batch = copy_->stage(*host, options_.device, decode_, *staged.ready);
    return staged;
  }
#endif
  if (decode_) decode_->render(host->encoded, host->images, host->targets);
  staged.batch = std::move(*host);
  return staged;
}

std::optional<DeviceBatch> DeviceFeeder::next() {
  std::optional<StagedBatch> staged = ahead_ ? ahead_->thread.next() : stage_next(/*on_caller_thread=*/true);
  if (!staged) return std::nullopt;
  if (ahead_) arrived();  // staged ahead: the wait for data ends here
  Batch* host = &staged->batch;
#if CVTRAIN_WITH_CUDA
  if (staged->ready) CopyStream::hand_over(*host, *staged->ready, options_.device);
#endif
  at::Tensor images = host->images;
  if (images.scalar_type() == at::kByte) {  // else the workers normalised and erased it (LoaderOptions::normalize)
    // NHWC uint8 viewed as NCHW is channels_last already: one pass converts and lays out.
    const auto layout = options_.channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
    images = images.permute({0, 3, 1, 2}).to(at::TensorOptions().dtype(at::kFloat), false, false, layout);
    images.sub_(mean_).mul_(inv_std_);
    erase_batch(images, host->erase_boxes, options_.erase_mode, host->erase_key);  // after normalising, as timm erases
  }
  if (options_.dtype != at::kFloat) images = images.to(options_.dtype);
  return DeviceBatch{images, host->targets, host->first_sample};
}

}  // namespace cvtrain
