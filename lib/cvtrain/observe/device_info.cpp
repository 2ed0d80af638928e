// The CUDA devices this process sees and their properties (see device_info.h).
#include "cvtrain/observe/device_info.h"

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/cuda.h>

#include "cvtrain/build_config.h"

#if CVTRAIN_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace cvtrain {

int visible_cuda_devices() { return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0; }

std::string device_name(const c10::Device& device) {
#if CVTRAIN_WITH_CUDA
  if (device.is_cuda()) return at::cuda::getDeviceProperties(device.index())->name;
#endif
  return device.str();
}

int compute_capability_major(const c10::Device& device) {
#if CVTRAIN_WITH_CUDA
  if (device.is_cuda()) return at::cuda::getDeviceProperties(device.index())->major;
#endif
  (void)device;
  return 0;
}

std::string cuda_runtime_version() {
  return at::hasCUDA() ? std::to_string(at::detail::getCUDAHooks().versionCUDART()) : "none";
}

}  // namespace cvtrain
