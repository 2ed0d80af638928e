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

std::vector<int64_t> repeated_order(const std::vector<int64_t>& order, int64_t repeats, int64_t global_batch) {
  if (repeats <= 1) return order;
  const int64_t distinct = (global_batch + repeats - 1) / repeats;  // samples per global batch
  const int64_t steps = static_cast<int64_t>(order.size()) / global_batch;
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(steps * global_batch));
  for (int64_t s = 0; s < steps; ++s)
    for (int64_t slot = 0; slot < global_batch; ++slot) {
      const int64_t copy = slot / distinct, j = slot % distinct;
      out.push_back(order[static_cast<size_t>(s * distinct + j)] | (copy << kCopyShift));
    }
  return out;
}

std::vector<int64_t> rank_share(const std::vector<int64_t>& order, int64_t global_batch, int world, int rank) {
  const int64_t per_rank = global_batch / world;
  const int64_t steps = static_cast<int64_t>(order.size()) / global_batch;
  std::vector<int64_t> share;
  share.reserve(static_cast<size_t>(steps * per_rank));
  for (int64_t s = 0; s < steps; ++s) {
    const auto first = order.begin() + s * global_batch + rank * per_rank;
    share.insert(share.end(), first, first + per_rank);
  }
  return share;
}

std::vector<int64_t> eval_share(size_t size, int world, int rank) {
  std::vector<int64_t> share;
  for (auto i = static_cast<size_t>(rank); i < size; i += static_cast<size_t>(world)) share.push_back(static_cast<int64_t>(i));
  return share;
}

}  // namespace cvtrain
