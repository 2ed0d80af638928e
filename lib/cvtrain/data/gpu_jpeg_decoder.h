// JPEG decode on the GPU through nvJPEG's batched API: its hardware engine where the GPU has one
// (A100, H100, H200), its GPU-hybrid CUDA backend elsewhere. libnvjpeg is loaded when first asked
// for (PyPI's nvidia-nvjpeg wheel), so the binary runs where it is absent and says why it cannot
// decode there.
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
  // Decodes files it takes, all in one batched call on the current stream. Where nvJPEG decodes
  // regions (decodes_regions()), each file only from the 16-pixel block corner before its region to
  // the region's end; else whole. The hardware engine is first asked about each file
  // (nvjpegDecodeBatchedSupported); one it refuses is left out of the call, its pixels undefined.
  // Throws Error when nvJPEG rejects the batch.
  std::vector<DeviceWindow> decode(const std::vector<const std::vector<uint8_t>*>& files,
                                   const std::vector<PixelRect>& regions) override;
  // "hardware", "gpu_hybrid" (Huffman decoding on the GPU for batches over 50) or "default".
  const std::string& backend() const { return backend_; }
  // Whether nvjpegDecodeBatchedEx decodes regions of interest here: checked when opened, on a JPEG
  // with known pixels, against the whole decode (the API has it; whether a backend honours it in
  // batches is not documented).
  bool decodes_regions() const { return decodes_regions_; }

 private:
  GpuJpegDecoder() = default;
  void initialize_batch(int count);
  std::vector<DeviceWindow> decode_batch(const std::vector<const std::vector<uint8_t>*>& files, const std::vector<PixelRect>& regions,
                                         bool in_regions);
  bool check_region_decoding();
  struct Library;  // the handle, state and the dlopen'd functions, in gpu_jpeg_decoder.cpp
  std::unique_ptr<Library> library_;
  c10::Device device_{c10::kCPU};
  std::string backend_;
  int batch_initialized_ = 0;
  bool decodes_regions_ = false;
};

}  // namespace cvtrain
