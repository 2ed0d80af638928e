// What Nsight Systems sees of a run: NVTX ranges (cvtrain's step phases on the timeline) and the
// CUDA profiler's capture window (cudaProfilerStart/Stop, which `nsys profile
// --capture-range=cudaProfilerApi` honours). No-ops in a build without CUDA; without a tool
// attached an NVTX call costs a pointer test. Torch-free, built with the CUDA headers.
#pragma once

namespace cvtrain {

void nvtx_push(const char* name);
void nvtx_pop();

// False when this build has no CUDA or the runtime refuses (no device).
bool cuda_profiler_start();
void cuda_profiler_stop();

}  // namespace cvtrain
