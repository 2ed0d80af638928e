// The training order of one epoch: a permutation that depends only on (seed, epoch, size).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cvtrain {

// Fisher–Yates over SplitMix64 keyed by sample_key(seed, epoch, ~0); scripts/reference_train.py
// mirrors it, so the Python reference sees the same order.
std::vector<int64_t> epoch_order(uint64_t seed, int64_t epoch, size_t size);

// The samples one rank consumes in an epoch: global batch s is order[s*G, (s+1)*G) whatever the
// world size, and rank r takes its r-th contiguous G/world share of every one. The samples after
// the last full global batch (size % G, a different set each epoch) are not used that epoch.
// G must be a multiple of world.
std::vector<int64_t> rank_share(const std::vector<int64_t>& order, int64_t global_batch, int world, int rank);

// Evaluation shard: every world-th sample starting at rank, so each is counted exactly once.
std::vector<int64_t> eval_share(size_t size, int world, int rank);

}  // namespace cvtrain
