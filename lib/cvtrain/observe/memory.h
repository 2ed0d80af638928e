// Peak memory of this process, for the memory report of the strategies.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>

namespace cvtrain {

// CUDA: the caching allocator's peak of allocated bytes on the device since the start (tensors,
// not the allocator's reserve); CPU: the process's peak resident set size (everything, libraries
// included, so compare runs rather than read it alone).
int64_t peak_memory_bytes(const c10::Device& device);

}  // namespace cvtrain
