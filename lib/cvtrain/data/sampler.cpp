// Deterministic epoch permutation (see sampler.h).
#include "cvtrain/data/sampler.h"

#include <numeric>
#include <utility>

#include "cvtrain/core/rng.h"

namespace cvtrain {

std::vector<int64_t> epoch_order(uint64_t seed, int64_t epoch, size_t size) {
  std::vector<int64_t> order(size);
  std::iota(order.begin(), order.end(), int64_t{0});
  SplitMix64 rng(sample_key(seed, static_cast<uint64_t>(epoch), ~uint64_t{0}));
  for (size_t i = size; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  return order;
}

}  // namespace cvtrain
