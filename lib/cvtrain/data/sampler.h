// The training order of one epoch: a permutation that depends only on (seed, epoch, size).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cvtrain {

// Fisher–Yates over SplitMix64 keyed by sample_key(seed, epoch, ~0); scripts/reference_train.py
// mirrors it, so the Python reference sees the same order.
std::vector<int64_t> epoch_order(uint64_t seed, int64_t epoch, size_t size);

// An entry of an epoch's order: the dataset index in the low bits, and under repeated augmentation
// which copy of the sample it is in the high ones, so that each copy draws its own augmentation
// (the entry keys the draws; copy 0 is the plain index).
constexpr int kCopyShift = 48;
constexpr int64_t dataset_index(int64_t entry) { return entry & ((int64_t{1} << kCopyShift) - 1); }

// Repeated augmentation (DeiT's `aug_repeats`): global batch s of G slots holds the next
// ceil(G / k) samples of `order` k times each, copy q of the j-th in slot q * ceil(G / k) + j, so
// that with k or more ranks the copies of a sample land on different ranks, whatever the world
// size. The epoch keeps its length (N / k distinct samples, k draws of each), as DeiT's sampler does.
std::vector<int64_t> repeated_order(const std::vector<int64_t>& order, int64_t repeats, int64_t global_batch);

// The samples one rank consumes in an epoch: global batch s is order[s*G, (s+1)*G) whatever the
// world size, and rank r takes its r-th contiguous G/world share of every one. The samples after
// the last full global batch (size % G, a different set each epoch) are not used that epoch.
// G must be a multiple of world.
std::vector<int64_t> rank_share(const std::vector<int64_t>& order, int64_t global_batch, int world, int rank);

// Evaluation shard: every world-th sample starting at rank, so each is counted exactly once.
std::vector<int64_t> eval_share(size_t size, int world, int rank);

}  // namespace cvtrain
