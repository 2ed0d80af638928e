// GpuJpegDecoder (see gpu_jpeg_decoder.h): nvjpeg.h's types, its functions looked up with dlsym.
#include "cvtrain/data/gpu_jpeg_decoder.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <utility>

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
  decltype(&nvjpegDecodeBatchedInitialize) batched_initialize = nullptr;
  decltype(&nvjpegDecodeBatched) batched = nullptr;
  // Region decoding (optional: absent functions only turn it off).
  decltype(&nvjpegDecodeBatchedEx) batched_ex = nullptr;
  decltype(&nvjpegDecodeParamsCreate) params_create = nullptr;
  decltype(&nvjpegDecodeParamsDestroy) params_destroy = nullptr;
  decltype(&nvjpegDecodeParamsSetOutputFormat) params_format = nullptr;
  decltype(&nvjpegDecodeParamsSetROI) params_roi = nullptr;
  decltype(&nvjpegDecodeBatchedPreAllocate) preallocate = nullptr;  // optional too
  // The hardware engine's answer per file (optional: absent, every file the header allows is sent).
  decltype(&nvjpegJpegStreamCreate) stream_create = nullptr;
  decltype(&nvjpegJpegStreamDestroy) stream_destroy = nullptr;
  decltype(&nvjpegJpegStreamParseHeader) parse_header = nullptr;
  decltype(&nvjpegDecodeBatchedSupported) supported = nullptr;
  decltype(&nvjpegDecodeBatchedSupportedEx) supported_ex = nullptr;
  nvjpegJpegStream_t parsed = nullptr;  // the header the engine is asked about
  nvjpegHandle_t handle = nullptr;
  nvjpegJpegState_t state = nullptr;
  std::vector<nvjpegDecodeParams_t> params;  // one per image of the largest batch so far
  bool hardware = false;

  ~Library() {
    if (parsed) stream_destroy(parsed);
    for (nvjpegDecodeParams_t p : params) params_destroy(p);
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
  template <typename Fn>
  bool bind_optional(Fn& fn, const char* name) {
    fn = reinterpret_cast<Fn>(dlsym(so, name));
    return fn != nullptr;
  }
  bool has_region_decoding() {
    return bind_optional(batched_ex, "nvjpegDecodeBatchedEx") && bind_optional(params_create, "nvjpegDecodeParamsCreate") &&
           bind_optional(params_destroy, "nvjpegDecodeParamsDestroy") &&
           bind_optional(params_format, "nvjpegDecodeParamsSetOutputFormat") && bind_optional(params_roi, "nvjpegDecodeParamsSetROI");
  }
  // Whether the hardware engine answers per file; only asked of the hardware backend.
  bool open_support_queries() {
    return bind_optional(stream_create, "nvjpegJpegStreamCreate") && bind_optional(stream_destroy, "nvjpegJpegStreamDestroy") &&
           bind_optional(parse_header, "nvjpegJpegStreamParseHeader") && bind_optional(supported, "nvjpegDecodeBatchedSupported") &&
           bind_optional(supported_ex, "nvjpegDecodeBatchedSupportedEx") && stream_create(handle, &parsed) == NVJPEG_STATUS_SUCCESS;
  }
  // The engine's own word on one file (0 means yes), with its region where `roi` is given: it knows
  // limits the frame header does not show, and one file it refuses would fail the whole batch. A
  // header it cannot parse is refused too; the CPU path then says what is wrong with the file.
  bool engine_takes(const std::vector<uint8_t>& file, nvjpegDecodeParams_t roi) {
    if (!parsed) return true;
    int answer = -1;
    if (parse_header(handle, file.data(), file.size(), parsed) != NVJPEG_STATUS_SUCCESS) return false;
    const nvjpegStatus_t status = roi ? supported_ex(handle, parsed, roi, &answer) : supported(handle, parsed, &answer);
    return status == NVJPEG_STATUS_SUCCESS && answer == 0;
  }
};

namespace {

void check_status(nvjpegStatus_t status, const std::string& what) {
  if (status != NVJPEG_STATUS_SUCCESS) throw Error(fmt::format("{} failed with status {}", what, static_cast<int>(status)));
}

// Where a window for `region` of a `width` x `height` image starts and ends: from the 16-pixel
// block corner at or before it (MCU-aligned, whatever the chroma) to its end, inside the image.
PixelRect window_for(const PixelRect& region, int width, int height) {
  if (region.width <= 0 || region.height <= 0) return PixelRect{0, 0, width, height};
  const int x = std::clamp(region.x, 0, width - 1) / 16 * 16, y = std::clamp(region.y, 0, height - 1) / 16 * 16;
  return PixelRect{x, y, std::min(width, region.x + region.width) - x, std::min(height, region.y + region.height) - y};
}

// A 96 x 64 RGB image with detail everywhere, for the region check.
Image textured_probe() {
  Image image{std::vector<uint8_t>(96 * 64 * 3), 64, 96, 3};
  for (int y = 0; y < 64; ++y)
    for (int x = 0; x < 96; ++x)
      for (int c = 0; c < 3; ++c) image.pixels[(static_cast<size_t>(y) * 96 + x) * 3 + c] = static_cast<uint8_t>((x * 7 + y * 13 + c * 50) % 256);
  return image;
}

}  // namespace

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
      !l.bind(l.batched_initialize, "nvjpegDecodeBatchedInitialize", why_not) ||
      !l.bind(l.batched, "nvjpegDecodeBatched", why_not))
    return nullptr;
  // The hardware engine where the GPU has one (its absence is a status, not an error). Otherwise
  // GPU_HYBRID, whose batched decode does the Huffman stage on the GPU for batches over 50: the
  // default backend would do it on this thread, the training loop's.
  std::string backend;
  for (const auto& [kind, name] : {std::pair{NVJPEG_BACKEND_HARDWARE, "hardware"}, std::pair{NVJPEG_BACKEND_GPU_HYBRID, "gpu_hybrid"},
                                   std::pair{NVJPEG_BACKEND_DEFAULT, "default"}}) {
    l.handle = nullptr;
    if (l.create(kind, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &l.handle) == NVJPEG_STATUS_SUCCESS) {
      backend = name;
      break;
    }
  }
  if (backend.empty()) {
    l.handle = nullptr;
    why_not = "nvjpegCreateEx failed for the hardware, GPU-hybrid and default backends";
    return nullptr;
  }
  l.hardware = backend == "hardware";
  if (const nvjpegStatus_t status = l.state_create(l.handle, &l.state); status != NVJPEG_STATUS_SUCCESS) {
    why_not = fmt::format("nvjpegJpegStateCreate failed with status {}", static_cast<int>(status));
    return nullptr;
  }
  // The hardware engine draws its buffers from a pool only once one is preallocated, even with a
  // size hint of 1 (NVIDIA's nvImageCodec does this and reports over 20 % on 8-GPU training). Only a
  // speed-up: its failure changes nothing else.
  if (l.hardware && l.bind_optional(l.preallocate, "nvjpegDecodeBatchedPreAllocate"))
    l.preallocate(l.handle, l.state, 1, 1, 1, NVJPEG_CSS_444, NVJPEG_OUTPUT_RGBI);
  if (l.hardware && !l.open_support_queries()) l.parsed = nullptr;
  std::unique_ptr<GpuJpegDecoder> decoder(new GpuJpegDecoder());
  decoder->library_ = std::move(library);
  decoder->device_ = device;
  decoder->backend_ = backend;
  decoder->decodes_regions_ = decoder->library_->has_region_decoding() && decoder->check_region_decoding();
  return decoder;
}

// A region decoded in a batch must equal that part of the whole decode: anything else (an error, an
// ignored ROI, other pixels) leaves region decoding off.
bool GpuJpegDecoder::check_region_decoding() {
  const std::vector<uint8_t> bytes = encode_jpeg(textured_probe(), 95);
  try {
    const at::Tensor whole = decode_batch({&bytes}, {PixelRect{}}, false)[0].pixels;
    const DeviceWindow part = decode_batch({&bytes}, {PixelRect{37, 21, 40, 30}}, true)[0];
    if (!whole.defined() || !part.pixels.defined()) return false;  // the engine refused the probe or its region
    if (part.x != 32 || part.y != 16 || part.pixels.size(0) != 35 || part.pixels.size(1) != 45) return false;
    const at::Tensor expected = whole.narrow(0, part.y, part.pixels.size(0)).narrow(1, part.x, part.pixels.size(1));
    return (expected.to(at::kInt) - part.pixels.to(at::kInt)).abs().max().item<int>() <= 2;
  } catch (const Error&) {
    return false;
  }
}

void GpuJpegDecoder::initialize_batch(int count) {
  if (batch_initialized_ == count) return;  // (re)sized for this many images, as the API asks
  check_status(library_->batched_initialize(library_->handle, library_->state, count, 1, NVJPEG_OUTPUT_RGBI),
               fmt::format("nvjpegDecodeBatchedInitialize for {} images", count));
  batch_initialized_ = count;
}

// Read from the frame header alone (no library call), so the loader's workers can ask at once.
bool GpuJpegDecoder::takes(const std::vector<uint8_t>& bytes) const {
  const std::optional<JpegCoding> coding = jpeg_coding(bytes);
  if (!coding || !gpu_decodable(*coding)) return false;
  return !library_->hardware || hardware_decodable_subsampling(*coding);
}

std::vector<DeviceWindow> GpuJpegDecoder::decode(const std::vector<const std::vector<uint8_t>*>& files,
                                                 const std::vector<PixelRect>& regions) {
  return decode_batch(files, regions, decodes_regions_);
}

std::vector<DeviceWindow> GpuJpegDecoder::decode_batch(const std::vector<const std::vector<uint8_t>*>& files,
                                                       const std::vector<PixelRect>& regions, bool in_regions) {
  Library& l = *library_;
  std::vector<DeviceWindow> windows(files.size());  // a refused file's pixels stay undefined
  if (files.empty()) return windows;
  while (in_regions && l.params.size() < files.size()) {
    l.params.emplace_back();
    check_status(l.params_create(l.handle, &l.params.back()), "nvjpegDecodeParamsCreate");
  }
  // What goes into the call: the files the engine takes, their destinations and parameters.
  std::vector<const unsigned char*> data;
  std::vector<size_t> lengths;
  std::vector<nvjpegImage_t> destinations;
  std::vector<nvjpegDecodeParams_t> params;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::optional<JpegCoding> coding = jpeg_coding(*files[i]);
    if (!coding) throw Error("GpuJpegDecoder::decode: a file it does not take");
    const PixelRect w = in_regions ? window_for(regions[i], coding->width, coding->height) : PixelRect{0, 0, coding->width, coding->height};
    if (in_regions) {
      check_status(l.params_format(l.params[i], NVJPEG_OUTPUT_RGBI), "nvjpegDecodeParamsSetOutputFormat");
      check_status(l.params_roi(l.params[i], w.x, w.y, w.width, w.height), "nvjpegDecodeParamsSetROI");
    }
    if (!l.engine_takes(*files[i], in_regions ? l.params[i] : nullptr)) continue;
    windows[i] = DeviceWindow{at::empty({w.height, w.width, 3}, at::TensorOptions(device_).dtype(at::kByte)), w.x, w.y};
    nvjpegImage_t destination{};
    destination.channel[0] = windows[i].pixels.data_ptr<uint8_t>();
    destination.pitch[0] = static_cast<size_t>(w.width) * 3;
    destinations.push_back(destination);
    data.push_back(files[i]->data());
    lengths.push_back(files[i]->size());
    if (in_regions) params.push_back(l.params[i]);
  }
  const int count = static_cast<int>(data.size());
  if (count == 0) return windows;
  initialize_batch(count);
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device_.index()).stream();
  const nvjpegStatus_t status = in_regions
                                    ? l.batched_ex(l.handle, l.state, data.data(), lengths.data(), destinations.data(), params.data(), stream)
                                    : l.batched(l.handle, l.state, data.data(), lengths.data(), destinations.data(), stream);
  if (status != NVJPEG_STATUS_SUCCESS) {
    batch_initialized_ = 0;  // a failed batch needs the state initialised again
    throw Error(fmt::format("nvjpegDecodeBatched{} ({} backend) failed on a batch of {} with status {}", in_regions ? "Ex" : "", backend_,
                            count, static_cast<int>(status)));
  }
  return windows;
}

#else  // built without nvjpeg.h

struct GpuJpegDecoder::Library {};

std::unique_ptr<GpuJpegDecoder> GpuJpegDecoder::open(const c10::Device& device, std::string& why_not) {
  why_not = device.is_cuda() ? "this build has no nvjpeg.h (scripts/setup.sh installs it with PyPI's nvidia-nvjpeg)"
                             : "nvJPEG decodes on a CUDA device; this one is " + device.str();
  return nullptr;
}
bool GpuJpegDecoder::takes(const std::vector<uint8_t>&) const { return false; }
std::vector<DeviceWindow> GpuJpegDecoder::decode(const std::vector<const std::vector<uint8_t>*>&, const std::vector<PixelRect>&) {
  return {};
}

#endif

GpuJpegDecoder::~GpuJpegDecoder() = default;

}  // namespace cvtrain
