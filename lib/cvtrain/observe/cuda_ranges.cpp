// NVTX ranges and the CUDA profiler window (see cuda_ranges.h).
#include "cvtrain/observe/cuda_ranges.h"

#include "cvtrain/build_config.h"

#if CVTRAIN_WITH_CUDA
#include <cuda_profiler_api.h>
#include <nvtx3/nvToolsExt.h>
#endif

namespace cvtrain {

#if CVTRAIN_WITH_CUDA
void nvtx_push(const char* name) { nvtxRangePushA(name); }
void nvtx_pop() { nvtxRangePop(); }
bool cuda_profiler_start() { return cudaProfilerStart() == cudaSuccess; }
void cuda_profiler_stop() { cudaProfilerStop(); }
#else
void nvtx_push(const char*) {}
void nvtx_pop() {}
bool cuda_profiler_start() { return false; }
void cuda_profiler_stop() {}
#endif

}  // namespace cvtrain
