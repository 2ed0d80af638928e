// peak_memory_bytes: the CUDA allocator's statistics, or getrusage's peak RSS.
#include "cvtrain/observe/memory.h"

#include <sys/resource.h>

#ifdef CVTRAIN_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace cvtrain {

int64_t peak_memory_bytes(const c10::Device& device) {
#ifdef CVTRAIN_WITH_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    return stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].peak;
  }
#endif
  (void)device;
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // kilobytes on Linux
}

}  // namespace cvtrain
