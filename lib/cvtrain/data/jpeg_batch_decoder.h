// What a loader hands undecoded JPEGs to (data.decoder nvjpeg): a decoder of whole batches on a
// device. GpuJpegDecoder is the real one; tests give a host one.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "cvtrain/data/dataset.h"

namespace cvtrain {

// Part of a decoded image: `pixels` (uint8 HWC RGB, on the decoder's device) hold the full-size
// source from column x, row y on. A whole image is the window at (0, 0).
struct DeviceWindow {
  at::Tensor pixels;
  int x = 0, y = 0;
};

class JpegBatchDecoder {
 public:
  virtual ~JpegBatchDecoder() = default;
  // Whether this decoder takes the file. Called by the loader's workers at once: thread-safe.
  virtual bool takes(const std::vector<uint8_t>& bytes) const = 0;
  // Decodes files it takes, all in one call on the current stream, at full size. `regions[i]` is
  // the part of file i the caller needs (width 0: all of it); a decoder that can decode part of a
  // file (nvJPEG's ROI) returns a window covering at least that part, others the whole image. A
  // file it finds it cannot decode after all (nvJPEG's hardware engine asked per file) gets a
  // window with undefined `pixels`, for the CPU. Throws Error when the batch is rejected.
  virtual std::vector<DeviceWindow> decode(const std::vector<const std::vector<uint8_t>*>& files,
                                           const std::vector<PixelRect>& regions) = 0;
};

}  // namespace cvtrain
