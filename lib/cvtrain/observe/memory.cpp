// peak_memory_bytes: the CUDA allocator's statistics, or getrusage's peak RSS.
#include "cvtrain/observe/memory.h"

#include "cvtrain/build_config.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

#if CVTRAIN_WITH_CUDA
#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace cvtrain {
namespace {

#if CVTRAIN_WITH_CUDA
// The caching allocator's count of bytes in live tensors on the device, or reserved from it.
c10::CachingAllocator::Stat allocated(const c10::Device& device, bool reserved = false) {
  at::globalContext().lazyInitDevice(c10::kCUDA);  // else the allocator has no statistics until a tensor exists
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
  const auto aggregate = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  return reserved ? stats.reserved_bytes[aggregate] : stats.allocated_bytes[aggregate];
}
#endif

}  // namespace

int64_t peak_memory_bytes(const c10::Device& device) {
#if CVTRAIN_WITH_CUDA
  if (device.is_cuda()) return allocated(device).peak;
#endif
  (void)device;
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // kilobytes on Linux
}

int64_t peak_reserved_bytes(const c10::Device& device) {
#if CVTRAIN_WITH_CUDA
  if (device.is_cuda()) return allocated(device, /*reserved=*/true).peak;
#endif
  (void)device;
  return 0;
}

int64_t current_memory_bytes(const c10::Device& device) {
#if CVTRAIN_WITH_CUDA
  if (device.is_cuda()) return allocated(device).current;
#endif
  (void)device;
  long pages = 0, resident = 0;
  if (std::FILE* statm = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(statm, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(statm);
  }
  return static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE);
}

void reset_peak_memory(const c10::Device& device) {
#if CVTRAIN_WITH_CUDA
  if (device.is_cuda()) {
    at::globalContext().lazyInitDevice(c10::kCUDA);
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
  }
#endif
  (void)device;
}

void release_cached_memory(const c10::Device& device) {
#if CVTRAIN_WITH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::emptyCache();
#endif
  (void)device;
}

int64_t device_memory_bytes(const c10::Device& device) {
#if CVTRAIN_WITH_CUDA
  if (device.is_cuda()) return static_cast<int64_t>(at::cuda::getDeviceProperties(device.index())->totalGlobalMem);
#endif
  (void)device;
  return 0;
}

}  // namespace cvtrain
