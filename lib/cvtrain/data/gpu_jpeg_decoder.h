// JPEG decode on the GPU through nvJPEG's batched API: its hardware engine where the GPU has one
// (A100, H100, H200), its CUDA backend elsewhere. libnvjpeg is loaded when first asked for (PyPI's
// nvidia-nvjpeg wheel), so the binary runs where it is absent and says why it cannot decode there.
// Files nvJPEG does not take (progressive, CMYK, other formats: jpeg_coding.h) stay with the CPU.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cvtrain/data/jpeg_batch_decoder.h"

namespace cvtrain {

class GpuJpegDecoder : public JpegBatchDecoder {
 public:
  // Null, with the reason in `why_not`, where nvJPEG cannot run: not a CUDA device, a build without
  // nvjpeg.h, no libnvjpeg.so.13 on the library path (CVTRAIN_NVJPEG_LIBRARY names another file).
  static std::unique_ptr<GpuJpegDecoder> open(const c10::Device& device, std::string& why_not);
  ~GpuJpegDecoder() override;
  GpuJpegDecoder(const GpuJpegDecoder&) = delete;
  GpuJpegDecoder& operator=(const GpuJpegDecoder&) = delete;

  // Whether this decoder takes the file: a JPEG that gpu_decodable() allows and whose chroma the
  // backend handles (the hardware engine has no 4:1:0 or 4:1:1).
  bool takes(const std::vector<uint8_t>& bytes) const override;
  // Decodes files it takes, all in one batched call on the current stream, each to a uint8 HWC RGB
  // tensor on the device at full size. Throws Error when nvJPEG rejects the batch.
  std::vector<at::Tensor> decode(const std::vector<const std::vector<uint8_t>*>& files) override;
  // "hardware" or "cuda".
  const std::string& backend() const { return backend_; }

 private:
  GpuJpegDecoder() = default;
  struct Library;  // the handle, state and the dlopen'd functions, in gpu_jpeg_decoder.cpp
  std::unique_ptr<Library> library_;
  c10::Device device_{c10::kCPU};
  std::string backend_;
  int batch_initialized_ = 0;
};

}  // namespace cvtrain
