// What this process knows of its devices: how many CUDA devices it sees, and what the profiler
// needs of one: its name (to find its peak in observe/device_peaks.h), its compute capability
// (whether it has fast bf16), the CUDA runtime.
#pragma once

#include <c10/core/Device.h>

#include <string>

namespace cvtrain {

// CUDA devices this process sees (0 without CUDA): what distributed.nproc_per_node auto means.
int visible_cuda_devices();
std::string device_name(const c10::Device& device);  // "NVIDIA H200"; "cpu"
int compute_capability_major(const c10::Device& device);  // 9 for Hopper; 0 on CPU
std::string cuda_runtime_version();  // "13000" as cudart reports it; "none" without CUDA

}  // namespace cvtrain
