// GpuJpegDecoder (see gpu_jpeg_decoder.h): nvjpeg.h's types, its functions looked up with dlsym.
#include "cvtrain/data/gpu_jpeg_decoder.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <cstdlib>

#include "cvtrain/build_config.h"
#include "cvtrain/core/error.h"
#include "cvtrain/data/jpeg_coding.h"

#if CVTRAIN_WITH_NVJPEG
#include <c10/cuda/CUDAStream.h>
#include <dlfcn.h>
#include <nvjpeg.h>
#endif

namespace cvtrain {

#if CVTRAIN_WITH_NVJPEG

struct GpuJpegDecoder::Library {
  void* so = nullptr;
  decltype(&nvjpegCreateEx) create = nullptr;
  decltype(&nvjpegDestroy) destroy = nullptr;
  decltype(&nvjpegJpegStateCreate) state_create = nullptr;
  decltype(&nvjpegJpegStateDestroy) state_destroy = nullptr;
  decltype(&nvjpegGetImageInfo) image_info = nullptr;
  decltype(&nvjpegDecodeBatchedInitialize) batched_initialize = nullptr;
  decltype(&nvjpegDecodeBatched) batched = nullptr;
  nvjpegHandle_t handle = nullptr;
  nvjpegJpegState_t state = nullptr;
  bool hardware = false;

  ~Library() {
    if (state) state_destroy(state);
    if (handle) destroy(handle);
    if (so) dlclose(so);
  }
  // The function `name` from the library; false (with `why_not` said) when it is missing.
  template <typename Fn>
  bool bind(Fn& fn, const char* name, std::string& why_not) {
    fn = reinterpret_cast<Fn>(dlsym(so, name));
    if (!fn) why_not = fmt::format("libnvjpeg has no {}", name);
    return fn != nullptr;
  }
};

std::unique_ptr<GpuJpegDecoder> GpuJpegDecoder::open(const c10::Device& device, std::string& why_not) {
  if (!device.is_cuda()) {
    why_not = "nvJPEG decodes on a CUDA device; this one is " + device.str();
    return nullptr;
  }
  auto library = std::make_unique<Library>();
  const char* named = std::getenv("CVTRAIN_NVJPEG_LIBRARY");
  const char* file = named ? named : "libnvjpeg.so.13";
  library->so = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (!library->so) {
    why_not = fmt::format("cannot load {} ({}); it comes with PyPI's nvidia-nvjpeg wheel", file, dlerror());
    return nullptr;
  }
  Library& l = *library;
  if (!l.bind(l.create, "nvjpegCreateEx", why_not) || !l.bind(l.destroy, "nvjpegDestroy", why_not) ||
      !l.bind(l.state_create, "nvjpegJpegStateCreate", why_not) || !l.bind(l.state_destroy, "nvjpegJpegStateDestroy", why_not) ||
      !l.bind(l.image_info, "nvjpegGetImageInfo", why_not) || !l.bind(l.batched_initialize, "nvjpegDecodeBatchedInitialize", why_not) ||
      !l.bind(l.batched, "nvjpegDecodeBatched", why_not))
    return nullptr;
  // The hardware engine where the GPU has one; its absence is a status, not an error.
  l.hardware = l.create(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &l.handle) == NVJPEG_STATUS_SUCCESS;
  if (!l.hardware) {
    l.handle = nullptr;
    const nvjpegStatus_t status = l.create(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &l.handle);
    if (status != NVJPEG_STATUS_SUCCESS) {
      why_not = fmt::format("nvjpegCreateEx failed with status {}", static_cast<int>(status));
      return nullptr;
    }
  }
  if (const nvjpegStatus_t status = l.state_create(l.handle, &l.state); status != NVJPEG_STATUS_SUCCESS) {
    why_not = fmt::format("nvjpegJpegStateCreate failed with status {}", static_cast<int>(status));
    return nullptr;
  }
  std::unique_ptr<GpuJpegDecoder> decoder(new GpuJpegDecoder());
  decoder->library_ = std::move(library);
  decoder->device_ = device;
  decoder->backend_ = decoder->library_->hardware ? "hardware" : "cuda";
  return decoder;
}

bool GpuJpegDecoder::takes(const std::vector<uint8_t>& bytes) const {
  const std::optional<JpegCoding> coding = jpeg_coding(bytes);
  if (!coding || !gpu_decodable(*coding)) return false;
  int components = 0;
  nvjpegChromaSubsampling_t subsampling{};
  int widths[NVJPEG_MAX_COMPONENT] = {}, heights[NVJPEG_MAX_COMPONENT] = {};
  if (library_->image_info(library_->handle, bytes.data(), bytes.size(), &components, &subsampling, widths, heights) !=
      NVJPEG_STATUS_SUCCESS)
    return false;
  return !library_->hardware || (subsampling != NVJPEG_CSS_410 && subsampling != NVJPEG_CSS_411);
}

std::vector<at::Tensor> GpuJpegDecoder::decode(const std::vector<const std::vector<uint8_t>*>& files) {
  Library& l = *library_;
  const int count = static_cast<int>(files.size());
  if (count == 0) return {};
  std::vector<at::Tensor> images;
  std::vector<const unsigned char*> data;
  std::vector<size_t> lengths;
  std::vector<nvjpegImage_t> destinations(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    const std::optional<JpegCoding> coding = jpeg_coding(*files[i]);
    if (!coding) throw Error("GpuJpegDecoder::decode: a file it does not take");
    images.push_back(at::empty({coding->height, coding->width, 3}, at::TensorOptions(device_).dtype(at::kByte)));
    destinations[i] = nvjpegImage_t{};
    destinations[i].channel[0] = images.back().data_ptr<uint8_t>();
    destinations[i].pitch[0] = static_cast<size_t>(coding->width) * 3;
    data.push_back(files[i]->data());
    lengths.push_back(files[i]->size());
  }
  if (batch_initialized_ != count) {  // (re)sized for this many images, as the API asks
    if (const nvjpegStatus_t status = l.batched_initialize(l.handle, l.state, count, 1, NVJPEG_OUTPUT_RGBI); status != NVJPEG_STATUS_SUCCESS)
      throw Error(fmt::format("nvjpegDecodeBatchedInitialize for {} images failed with status {}", count, static_cast<int>(status)));
    batch_initialized_ = count;
  }
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device_.index()).stream();
  if (const nvjpegStatus_t status = l.batched(l.handle, l.state, data.data(), lengths.data(), destinations.data(), stream);
      status != NVJPEG_STATUS_SUCCESS) {
    batch_initialized_ = 0;  // a failed batch needs the state initialised again
    throw Error(fmt::format("nvjpegDecodeBatched ({} backend) failed on a batch of {} with status {}", backend_, count,
                            static_cast<int>(status)));
  }
  return images;
}

#else  // built without nvjpeg.h

struct GpuJpegDecoder::Library {};

std::unique_ptr<GpuJpegDecoder> GpuJpegDecoder::open(const c10::Device& device, std::string& why_not) {
  why_not = device.is_cuda() ? "this build has no nvjpeg.h (scripts/setup.sh installs it with PyPI's nvidia-nvjpeg)"
                             : "nvJPEG decodes on a CUDA device; this one is " + device.str();
  return nullptr;
}
bool GpuJpegDecoder::takes(const std::vector<uint8_t>&) const { return false; }
std::vector<at::Tensor> GpuJpegDecoder::decode(const std::vector<const std::vector<uint8_t>*>&) { return {}; }

#endif

GpuJpegDecoder::~GpuJpegDecoder() = default;

}  // namespace cvtrain
