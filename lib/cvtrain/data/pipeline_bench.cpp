// `cvtrain data bench`: BatchLoader + DeviceFeeder over epoch orders, timed after a warm-up batch;
// with --decoder nvjpeg, as training runs it: the workers read and plan, DeviceDecode decodes on the GPU.
#include "cvtrain/data/pipeline_bench.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <memory>
#include <stdexcept>

#include "cvtrain/build_config.h"
#include "cvtrain/core/cpu_budget.h"
#include "cvtrain/core/error.h"
#include "cvtrain/core/timer.h"
#include "cvtrain/data/batch_loader.h"
#include "cvtrain/data/device_decode.h"
#include "cvtrain/data/device_feeder.h"
#include "cvtrain/data/device_render.h"
#include "cvtrain/data/gpu_jpeg_decoder.h"
#include "cvtrain/data/host_normalize.h"
#include "cvtrain/data/sampler.h"
#include "cvtrain/data/segmentation_batches.h"
#include "cvtrain/recipe/recipe.h"

#if CVTRAIN_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace cvtrain {

namespace {

AugmentInterpolation bench_interpolation(const PipelineBenchOptions& o) {
  const auto interpolation = enum_of<AugmentInterpolation>(o.interpolation);
  if (!interpolation || (o.evaluation && *interpolation == AugmentInterpolation::kRandom))
    throw Error(fmt::format("--interpolation: '{}' is not one of: bilinear, bicubic{}", o.interpolation, o.evaluation ? "" : ", random"));
  return *interpolation;
}

// The bench's training augmentation, from its options.
AugmentSpec bench_augment(const PipelineBenchOptions& o) {
  AugmentSpec augment;
  augment.random_resized_crop = o.random_resized_crop;
  augment.hflip = FlipChance{o.hflip ? 0.5 : 0.0};
  try {
    augment.auto_augment = parse_augment_policy(o.auto_augment);
  } catch (const std::invalid_argument& e) {
    throw Error(fmt::format("--auto-augment: {}", e.what()));
  }
  augment.interpolation = bench_interpolation(o);
  // timm's transforms resample the policy's geometric ops with the crop's filter (both random: its own draw).
  augment.aa_interpolation = augment.interpolation;
  augment.random_erasing.prob = o.random_erasing;
  return augment;
}

LoaderOptions bench_loader_options(const PipelineBenchOptions& o, const AugmentSpec* augment, BadSamples* bad) {
  LoaderOptions loader;
  loader.batch_size = o.batch_size;
  loader.drop_last = true;
  loader.workers = o.workers;
  loader.prefetch = o.prefetch;
  loader.pin_memory = wants_pinned_memory(o.device);
  loader.transform.augment = o.evaluation ? nullptr : augment;
  loader.transform.image_size = o.image_size;
  loader.transform.seed = o.seed;
  if (o.evaluation) loader.transform.eval_filter = resize_filter(bench_interpolation(o));
  loader.bad_samples = bad;
  return loader;
}

FeedOptions bench_feed_options(const PipelineBenchOptions& o, const Dataset& dataset, const AugmentSpec& augment) {
  FeedOptions feed;
  feed.device = o.device;
  feed.mean.assign(static_cast<size_t>(dataset.channels()), 0.5);
  feed.std.assign(static_cast<size_t>(dataset.channels()), 0.25);
  feed.erase_mode = augment.random_erasing.mode;
  return feed;
}

// --decoder nvjpeg: the GPU decoder, with the loader told to keep the JPEGs it takes encoded.
std::unique_ptr<GpuJpegDecoder> bench_gpu_decoder(const PipelineBenchOptions& o, LoaderOptions& loader) {
  if (o.decoder == "cpu") return nullptr;
  if (o.decoder != "nvjpeg") throw Error(fmt::format("--decoder: '{}' is neither cpu nor nvjpeg", o.decoder));
  std::string why_not;
  std::unique_ptr<GpuJpegDecoder> decoder = GpuJpegDecoder::open(o.device, why_not);
  if (!decoder) throw Error("--decoder nvjpeg: " + why_not);
  if (!device_renderable(loader.transform))
    throw Error("--decoder nvjpeg renders crop and flip on the device; --auto-augment runs with the CPU decoder");
  GpuJpegDecoder* taker = decoder.get();
  loader.keep_encoded = [taker](const std::vector<uint8_t>& bytes) { return taker->takes(bytes); };
  return decoder;
}

}  // namespace

PipelineBenchResult bench_pipeline(const Dataset& dataset, const PipelineBenchOptions& o) {
  if (static_cast<int64_t>(dataset.size()) < o.batch_size)
    throw Error(fmt::format("the dataset has {} samples, fewer than one batch of {}", dataset.size(), o.batch_size));
  const AugmentSpec augment = bench_augment(o);
  BadSamples bad("data bench", dataset.size(), 1.0);
  LoaderOptions loader_options = bench_loader_options(o, &augment, &bad);
  const FeedOptions feed = bench_feed_options(o, dataset, augment);
  // The feeder's work (normalising, erasing, nvJPEG's decode) is timed on a GPU, and on the CPU
  // where erasing asks for it (there the workers do it, as in training).
  const bool through_feeder = o.device.is_cuda() || o.random_erasing > 0;
  if (through_feeder) loader_options.normalize = host_normalize(feed);
  const std::unique_ptr<GpuJpegDecoder> gpu_decoder = bench_gpu_decoder(o, loader_options);

  // Epoch after epoch until warm-up + the timed batches are done.
  PipelineBenchResult result;
  if (gpu_decoder) {
    result.gpu_backend = gpu_decoder->backend();
    result.gpu_regions = gpu_decoder->decodes_regions();
  }
  Stopwatch clock;
  double cpu_at_start = process_cpu_seconds();
  int64_t done = 0, gpu_decoded_before = 0;
  for (int64_t epoch = 0; done <= o.batches; ++epoch) {
    loader_options.transform.epoch = epoch;
    BatchLoader loader(dataset, epoch_order(o.seed, epoch, dataset.size()), loader_options);
    std::unique_ptr<DeviceDecode> decode;
    if (gpu_decoder) decode = std::make_unique<DeviceDecode>(*gpu_decoder, dataset, loader_options.transform, &bad);
    // On CPU the uint8 batch is the product, as with torchvision's DataLoader; with a GPU (or
    // erasing) the copy and the conversion there are part of what is timed.
    DeviceFeeder feeder(loader, feed, decode.get());
    while (done <= o.batches) {
      std::optional<at::Tensor> batch;
      if (through_feeder) {
        if (auto b = feeder.next()) batch = b->images;
      } else if (auto b = loader.next()) {
        batch = b->images;
      }
      if (!batch) break;
      if (done == 0) {  // the first batch pays for thread start-up, cold caches and nvJPEG's buffers
#if CVTRAIN_WITH_CUDA
        if (o.device.is_cuda()) c10::cuda::device_synchronize();
#endif
        clock.reset();
        cpu_at_start = process_cpu_seconds();
        gpu_decoded_before = decode ? decode->device_decoded() : 0;
      } else {
        result.images += batch->size(0);
      }
      ++done;
    }
    if (decode) result.gpu_decoded += decode->device_decoded() - gpu_decoded_before;
    gpu_decoded_before = 0;
  }
#if CVTRAIN_WITH_CUDA
  if (o.device.is_cuda()) c10::cuda::device_synchronize();
#endif
  result.seconds = clock.seconds();
  result.images_per_s = static_cast<double>(result.images) / std::max(result.seconds, 1e-9);
  result.cores_busy = (process_cpu_seconds() - cpu_at_start) / std::max(result.seconds, 1e-9);
  result.bad_samples = static_cast<int64_t>(bad.count());
  return result;
}

PipelineBenchResult bench_pair_pipeline(const SegmentationDataset& pairs, const PipelineBenchOptions& o) {
  if (static_cast<int64_t>(pairs.size()) < o.batch_size)
    throw Error(fmt::format("the dataset has {} pairs, fewer than one batch of {}", pairs.size(), o.batch_size));
  JointAugment augment;
  augment.scale_long = 2048;
  augment.scale_short = 512;
  augment.ratio_min = 0.5;
  augment.ratio_max = 2.0;
  augment.crop_height = augment.crop_width = static_cast<int>(o.image_size);
  augment.cat_max_ratio = 0.75;
  augment.hflip = o.hflip ? 0.5 : 0.0;
  augment.photometric = true;
  LoaderOptions loader;
  loader.batch_size = o.batch_size;
  loader.drop_last = true;
  loader.workers = o.workers;
  loader.prefetch = o.prefetch;
  PipelineBenchResult result;
  Stopwatch clock;
  double cpu_at_start = process_cpu_seconds();
  int64_t done = 0;
  for (int64_t epoch = 0; done <= o.batches; ++epoch) {
    BatchLoader batches(std::make_shared<SegmentationBatches>(pairs, SegmentationView{true, augment, o.seed, epoch}),
                        epoch_order(o.seed, epoch, pairs.size()), loader);
    for (std::optional<Batch> batch; done <= o.batches && (batch = batches.next()); ++done) {
      if (done == 0) {  // thread start-up and cold caches
        clock.reset();
        cpu_at_start = process_cpu_seconds();
      } else {
        result.images += batch->images.size(0);
      }
    }
  }
  result.seconds = clock.seconds();
  result.images_per_s = static_cast<double>(result.images) / std::max(result.seconds, 1e-9);
  result.cores_busy = (process_cpu_seconds() - cpu_at_start) / std::max(result.seconds, 1e-9);
  return result;
}

}  // namespace cvtrain
