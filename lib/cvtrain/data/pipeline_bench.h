// The input pipeline alone, timed: how many training (or evaluation) images per second this
// machine can decode and augment (and, with a CUDA device, stage on the GPU), without any model
// in the way.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cvtrain {

class Dataset;
class SegmentationDataset;

struct PipelineBenchOptions {
  int64_t workers = 2;
  int64_t batch_size = 256;
  int64_t image_size = 224;
  int64_t batches = 20;             // timed batches, after one warm-up batch
  int64_t prefetch = 4;
  std::vector<double> random_resized_crop{0.08, 1.0};
  bool hflip = true;
  std::string interpolation = "bilinear";  // the resize: augment.interpolation (bilinear, bicubic, random); with evaluation
                                           // data.eval_interpolation (bilinear, bicubic)
  std::string auto_augment;         // an augment.auto_augment policy after crop and flip; empty: none
  double random_erasing = 0;        // augment.random_erasing.prob (pixel mode); > 0 also times normalising and
                                    // erasing on the device (the CPU included), as timm's loader returns them
  bool evaluation = false;          // the evaluation view (Resize + CenterCrop) instead of the augmentation
  uint64_t seed = 0;
  c10::Device device = c10::Device(c10::kCPU);  // CUDA: batches are also copied and normalised there (CPU: with random_erasing)
  // cpu: the loader's workers decode and crop; nvjpeg: as data.decoder nvjpeg trains, the workers
  // only read and plan the files, nvJPEG decodes them in batches on the device and the crop is
  // rendered there (data/device_decode.h); files nvJPEG does not take stay with the workers.
  std::string decoder = "cpu";
};

struct PipelineBenchResult {
  int64_t images = 0;
  double seconds = 0;
  double images_per_s = 0;
  double cores_busy = 0;  // this process's CPU seconds over the timed window's seconds: host cores the pipeline kept busy
  int64_t bad_samples = 0;
  int64_t gpu_decoded = 0;   // decoder nvjpeg: images nvJPEG decoded (the rest went to the CPU)
  std::string gpu_backend;   // decoder nvjpeg: GpuJpegDecoder::backend()
  bool gpu_regions = false;  // decoder nvjpeg: whether it decoded only each crop's region
};

PipelineBenchResult bench_pipeline(const Dataset& dataset, const PipelineBenchOptions& options);

// Segmentation pairs through mmseg's standard training pipeline, as recipes/segformer_b0_ade20k.yaml
// sets it: RandomResize (scale (2048, 512), ratio 0.5-2), RandomCrop of image_size square with
// cat_max_ratio 0.75, flip (options.hflip), PhotoMetricDistortion and padding; uint8 images and
// masks on the CPU, by options.workers threads (of the options: workers, batch_size, image_size,
// batches, prefetch, seed).
PipelineBenchResult bench_pair_pipeline(const SegmentationDataset& pairs, const PipelineBenchOptions& options);

}  // namespace cvtrain
