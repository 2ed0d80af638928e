// The training order of one epoch: a permutation that depends only on (seed, epoch, size).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cvtrain {

// Fisher–Yates over SplitMix64 keyed by sample_key(seed, epoch, ~0); scripts/reference_train.py
// mirrors it, so the Python reference sees the same order.
std::vector<int64_t> epoch_order(uint64_t seed, int64_t epoch, size_t size);

}  // namespace cvtrain
