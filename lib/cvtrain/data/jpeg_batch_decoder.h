// What a loader hands undecoded JPEGs to (data.decoder nvjpeg): a decoder of whole batches on a
// device. GpuJpegDecoder is the real one; tests give a host one.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace cvtrain {

class JpegBatchDecoder {
 public:
  virtual ~JpegBatchDecoder() = default;
  // Whether this decoder takes the file. Called by the loader's workers at once: thread-safe.
  virtual bool takes(const std::vector<uint8_t>& bytes) const = 0;
  // Decodes files it takes, all in one call on the current stream, each whole and at full size to a
  // uint8 HWC RGB tensor on the decoder's device. Throws Error when the batch is rejected.
  virtual std::vector<at::Tensor> decode(const std::vector<const std::vector<uint8_t>*>& files) = 0;
};

}  // namespace cvtrain
