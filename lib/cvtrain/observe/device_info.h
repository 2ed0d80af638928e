// What the profiler needs to know of a device: its name (to find its peak in the table of
// observe/device_peaks.h), its compute capability (whether it has fast bf16), the CUDA runtime.
#pragma once

#include <c10/core/Device.h>

#include <string>

namespace cvtrain {

std::string device_name(const c10::Device& device);  // "NVIDIA H200"; "cpu"
int compute_capability_major(const c10::Device& device);  // 9 for Hopper; 0 on CPU
std::string cuda_runtime_version();  // "13000" as cudart reports it; "none" without CUDA

}  // namespace cvtrain
