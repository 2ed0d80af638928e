// Peak memory of this process, for the memory report of the strategies.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>

namespace cvtrain {

// CUDA: the caching allocator's peak of allocated bytes on the device since the start (tensors,
// not the allocator's reserve); CPU: the process's peak resident set size (everything, libraries
// included, so compare runs rather than read it alone).
int64_t peak_memory_bytes(const c10::Device& device);

// CUDA: the caching allocator's peak of reserved bytes (what the device lost to this process's
// allocator, the figure that runs out); 0 on CPU.
int64_t peak_reserved_bytes(const c10::Device& device);

// Memory in use now: CUDA allocated bytes, or the resident set size on CPU.
int64_t current_memory_bytes(const c10::Device& device);

// CUDA only (no-ops, or 0, elsewhere): start the peak over, return cached blocks to the driver,
// the device's total memory.
void reset_peak_memory(const c10::Device& device);
void release_cached_memory(const c10::Device& device);
int64_t device_memory_bytes(const c10::Device& device);

}  // namespace cvtrain
