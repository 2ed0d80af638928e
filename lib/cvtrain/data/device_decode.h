// data.decoder nvjpeg's device half: the samples a loader batch left encoded (Batch::encoded) are
// decoded in one call of a batch decoder and rendered, as their crop plans say, into their slots of
// the batch on the device. A batch the decoder rejects, and a file it refuses within a batch, go
// through the CPU path instead, sample by sample with the same plans and bad-sample rules, so a
// file nvJPEG cannot decode costs time, not the run.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "cvtrain/data/sample_pipeline.h"
#include "cvtrain/data/transforms.h"

namespace cvtrain {

class JpegBatchDecoder;

class DeviceDecode {
 public:
  // `transform` is the epoch's (the CPU fallback draws with it); `bad` as the loader's.
  DeviceDecode(JpegBatchDecoder& decoder, const Dataset& dataset, SampleTransform transform, BadSamples* bad);
  // Fills `images` (uint8 [B, H, W, 3], on the decoder's device) at the slots of `encoded`, and
  // `labels` where the CPU fallback had to take another sample. Runs on the current stream.
  void render(const std::vector<EncodedSample>& encoded, at::Tensor images, at::Tensor labels);

  int64_t device_decoded() const { return device_decoded_; }  // samples the decoder took
  int64_t host_decoded() const { return host_decoded_; }      // refused or in rejected batches: decoded on the CPU

 private:
  void render_on_host(const std::vector<EncodedSample>& encoded, at::Tensor images, at::Tensor labels);

  JpegBatchDecoder& decoder_;
  const Dataset& dataset_;
  SampleTransform transform_;
  BadSamples* bad_;
  int64_t device_decoded_ = 0, host_decoded_ = 0;
};

}  // namespace cvtrain
