// `cvtrain data bench`: BatchLoader + DeviceFeeder over epoch orders, timed after a warm-up batch;
// with --decoder nvjpeg, reading threads feeding nvJPEG's batched decode and the device's render.
#include "cvtrain/data/pipeline_bench.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <future>
#include <stdexcept>
#include <thread>

#include "cvtrain/build_config.h"
#include "cvtrain/core/error.h"
#include "cvtrain/core/cpu_budget.h"
#include "cvtrain/core/timer.h"
#include "cvtrain/data/batch_loader.h"
#include "cvtrain/data/device_feeder.h"
#include "cvtrain/data/device_render.h"
#include "cvtrain/data/gpu_jpeg_decoder.h"
#include "cvtrain/data/image_decode.h"
#include "cvtrain/data/sampler.h"
#include "cvtrain/recipe/recipe.h"

#if CVTRAIN_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace cvtrain {
namespace {

// One batch as the nvJPEG path handles it: files for the GPU, and samples the CPU finished.
struct ReadBatch {
  std::vector<size_t> indices;
  std::vector<std::vector<uint8_t>> files;  // per sample; empty where the CPU decoded it
  std::vector<Image> cpu_samples;           // per sample; empty where nvJPEG takes it
};

// The workers read a batch's files; those nvJPEG does not take they decode and crop themselves.
ReadBatch read_batch(const Dataset& dataset, const std::vector<size_t>& indices, const SampleTransform& transform,
                     const GpuJpegDecoder& decoder, int64_t workers) {
  ReadBatch batch{indices, std::vector<std::vector<uint8_t>>(indices.size()), std::vector<Image>(indices.size())};
  const auto work = [&](size_t from, size_t step) {
    for (size_t i = from; i < indices.size(); i += step) {
      RawSample raw = dataset.read(indices[i]);
      if (!raw.has_pixels() && decoder.takes(raw.encoded))
        batch.files[i] = std::move(raw.encoded);
      else
        batch.cpu_samples[i] = transform_sample(raw.has_pixels() ? raw.image : decode_image(raw.encoded, dataset.describe(indices[i])),
                                                transform, indices[i]);
    }
  };
  std::vector<std::thread> threads;
  for (int64_t t = 1; t < workers; ++t) threads.emplace_back(work, static_cast<size_t>(t), static_cast<size_t>(workers));
  work(0, static_cast<size_t>(workers));
  for (auto& t : threads) t.join();
  return batch;
}

// The batch on the device, uint8 NHWC: nvJPEG's images rendered there, the CPU's samples copied in.
at::Tensor assemble_batch(ReadBatch& read, GpuJpegDecoder& decoder, const SampleTransform& transform, const c10::Device& device,
                          int64_t& gpu_decoded) {
  const int64_t size = transform.image_size, count = static_cast<int64_t>(read.indices.size());
  at::Tensor batch = at::empty({count, size, size, 3}, at::TensorOptions(device).dtype(at::kByte));
  std::vector<const std::vector<uint8_t>*> files;
  std::vector<int64_t> slots;
  for (int64_t i = 0; i < count; ++i) {
    if (!read.files[static_cast<size_t>(i)].empty()) {
      files.push_back(&read.files[static_cast<size_t>(i)]);
      slots.push_back(i);
      continue;
    }
    Image& sample = read.cpu_samples[static_cast<size_t>(i)];
    const at::Tensor host = at::from_blob(sample.pixels.data(), {size, size, sample.channels}, at::kByte);
    batch[i].copy_(sample.channels == 3 ? host : host.expand({size, size, 3}));
  }
  const std::vector<at::Tensor> decoded = decoder.decode(files);
  for (size_t k = 0; k < decoded.size(); ++k) {
    const size_t index = read.indices[static_cast<size_t>(slots[k])];
    const ImageSize source{static_cast<int>(decoded[k].size(1)), static_cast<int>(decoded[k].size(0))};
    render_on_device(decoded[k], plan_sample(source, transform, index), size, batch[slots[k]]);
  }
  gpu_decoded += static_cast<int64_t>(decoded.size());
  return batch;
}

// decoder nvjpeg: the next batch is read while the device decodes and renders this one.
PipelineBenchResult bench_gpu_decoder(const Dataset& dataset, const PipelineBenchOptions& o, const SampleTransform& base) {
  std::string why_not;
  const std::unique_ptr<GpuJpegDecoder> decoder = GpuJpegDecoder::open(o.device, why_not);
  if (!decoder) throw Error("--decoder nvjpeg: " + why_not);
  if (!device_renderable(base) || o.random_erasing > 0)
    throw Error("--decoder nvjpeg renders crop and flip on the device; --auto-augment and --random-erasing run with the CPU decoder");
  const int64_t per_epoch = static_cast<int64_t>(dataset.size()) / o.batch_size;
  // The epoch's order is drawn once per epoch, not per batch (a permutation of the whole dataset).
  int64_t order_epoch = -1;
  std::vector<int64_t> order;
  const auto indices_of = [&](int64_t batch) {
    const int64_t epoch = batch / per_epoch, first = (batch % per_epoch) * o.batch_size;
    if (epoch != order_epoch) {
      order = epoch_order(o.seed, epoch, dataset.size());
      order_epoch = epoch;
    }
    return std::vector<size_t>(order.begin() + first, order.begin() + first + o.batch_size);
  };
  const auto transform_of = [&](int64_t batch) {
    SampleTransform t = base;
    t.epoch = batch / per_epoch;
    return t;
  };
  PipelineBenchResult result;
  result.gpu_backend = decoder->backend();
  const at::Tensor mean = at::full({1, 3, 1, 1}, 0.5, at::TensorOptions(o.device)), std = at::full({1, 3, 1, 1}, 0.25, at::TensorOptions(o.device));
  std::future<ReadBatch> next = std::async(std::launch::async, read_batch, std::cref(dataset), indices_of(0), transform_of(0),
                                           std::cref(*decoder), o.workers);
  Stopwatch clock;
  double cpu_at_start = process_cpu_seconds();
  int64_t gpu_decoded = 0;
  for (int64_t b = 0; b <= o.batches; ++b) {
    ReadBatch read = next.get();
    if (b < o.batches)
      next = std::async(std::launch::async, read_batch, std::cref(dataset), indices_of(b + 1), transform_of(b + 1), std::cref(*decoder),
                        o.workers);
    const at::Tensor batch = assemble_batch(read, *decoder, transform_of(b), o.device, gpu_decoded);
    // Normalised as the feeder does, so the GPU's share of the work is in the timing.
    batch.permute({0, 3, 1, 2}).to(at::kFloat).div_(255).sub_(mean).div_(std);
    if (b == 0) {  // the first batch pays for thread start-up and nvJPEG's buffers
#if CVTRAIN_WITH_CUDA
      c10::cuda::device_synchronize();
#endif
      clock.reset();
      cpu_at_start = process_cpu_seconds();
      gpu_decoded = 0;
    } else {
      result.images += batch.size(0);
    }
  }
#if CVTRAIN_WITH_CUDA
  c10::cuda::device_synchronize();
#endif
  result.seconds = clock.seconds();
  result.images_per_s = static_cast<double>(result.images) / std::max(result.seconds, 1e-9);
  result.cores_busy = (process_cpu_seconds() - cpu_at_start) / std::max(result.seconds, 1e-9);
  result.gpu_decoded = gpu_decoded;
  return result;
}

}  // namespace

PipelineBenchResult bench_pipeline(const Dataset& dataset, const PipelineBenchOptions& o) {
  if (static_cast<int64_t>(dataset.size()) < o.batch_size)
    throw Error(fmt::format("the dataset has {} samples, fewer than one batch of {}", dataset.size(), o.batch_size));
  AugmentSpec augment;
  augment.random_resized_crop = o.random_resized_crop;
  augment.hflip = o.hflip;
  try {
    augment.auto_augment = parse_augment_policy(o.auto_augment);
  } catch (const std::invalid_argument& e) {
    throw Error(fmt::format("--auto-augment: {}", e.what()));
  }
  augment.aa_interpolation = AugmentInterpolation::kBilinear;  // as timm's transforms with interpolation='bilinear'
  augment.random_erasing.prob = o.random_erasing;
  BadSamples bad("data bench", dataset.size(), 1.0);
  LoaderOptions loader_options;
  loader_options.batch_size = o.batch_size;
  loader_options.drop_last = true;
  loader_options.workers = o.workers;
  loader_options.prefetch = o.prefetch;
  loader_options.pin_memory = wants_pinned_memory(o.device);
  loader_options.transform.augment = o.evaluation ? nullptr : &augment;
  loader_options.transform.image_size = o.image_size;
  loader_options.transform.seed = o.seed;
  loader_options.bad_samples = &bad;
  FeedOptions feed;
  feed.device = o.device;
  feed.mean.assign(static_cast<size_t>(dataset.channels()), 0.5);
  feed.std.assign(static_cast<size_t>(dataset.channels()), 0.25);
  feed.erase_mode = augment.random_erasing.mode;
  // The feeder's work (normalising, erasing) is timed on a GPU, and on the CPU where erasing asks for it.
  const bool through_feeder = o.device.is_cuda() || o.random_erasing > 0;

  if (o.decoder == "nvjpeg") return bench_gpu_decoder(dataset, o, loader_options.transform);
  if (o.decoder != "cpu") throw Error(fmt::format("--decoder: '{}' is neither cpu nor nvjpeg", o.decoder));

  // Epoch after epoch until warm-up + the timed batches are done.
  PipelineBenchResult result;
  Stopwatch clock;
  double cpu_at_start = process_cpu_seconds();
  int64_t done = 0;
  for (int64_t epoch = 0; done <= o.batches; ++epoch) {
    loader_options.transform.epoch = epoch;
    BatchLoader loader(dataset, epoch_order(o.seed, epoch, dataset.size()), loader_options);
    // On CPU the uint8 batch is the product, as with torchvision's DataLoader; with a GPU (or
    // erasing) the copy and the conversion there are part of what is timed.
    DeviceFeeder feeder(loader, feed);
    while (done <= o.batches) {
      std::optional<at::Tensor> batch;
      if (through_feeder) {
        if (auto b = feeder.next()) batch = b->images;
      } else if (auto b = loader.next()) {
        batch = b->images;
      }
      if (!batch) break;
      if (done == 0) {  // the first batch pays for thread start-up and cold caches
        clock.reset();
        cpu_at_start = process_cpu_seconds();
      }
      else
        result.images += batch->size(0);
      ++done;
    }
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

}  // namespace cvtrain
