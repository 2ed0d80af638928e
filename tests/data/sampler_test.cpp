// Epoch order: a permutation, reproducible, different per epoch and seed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "cvtrain/data/sampler.h"

using namespace cvtrain;

TEST_CASE("epoch order is a permutation for any size", "[data]") {
  for (size_t n : {0, 1, 2, 7, 97, 1000}) {
    std::vector<int64_t> order = epoch_order(3, 1, n);
    std::sort(order.begin(), order.end());
    std::vector<int64_t> expected(n);
    std::iota(expected.begin(), expected.end(), int64_t{0});
    CHECK(order == expected);
  }
}

TEST_CASE("epoch order depends only on seed, epoch and size", "[data]") {
  CHECK(epoch_order(1, 2, 500) == epoch_order(1, 2, 500));
  CHECK(epoch_order(1, 2, 500) != epoch_order(1, 3, 500));
  CHECK(epoch_order(1, 2, 500) != epoch_order(2, 2, 500));
}

TEST_CASE("epoch order matches the Python reference's Fisher-Yates", "[data]") {
  // Values printed by scripts/reference_train.py's epoch_order(0, 0, 10).
  CHECK(epoch_order(0, 0, 10) == std::vector<int64_t>{7, 6, 9, 5, 2, 1, 4, 0, 8, 3});
}

TEST_CASE("every sample of the full global batches is seen exactly once across ranks", "[data]") {
  for (size_t n : {1, 2, 7, 13, 97, 101, 1000}) {
    for (int world = 1; world <= 8; ++world) {
      for (int64_t per_rank : {1, 3}) {
        const int64_t global = per_rank * world;
        const std::vector<int64_t> order = epoch_order(11, 2, n);
        std::vector<int64_t> seen;
        for (int r = 0; r < world; ++r) {
          const auto share = rank_share(order, global, world, r);
          seen.insert(seen.end(), share.begin(), share.end());
        }
        const size_t used = n / static_cast<size_t>(global) * static_cast<size_t>(global);
        REQUIRE(seen.size() == used);  // the remainder n % global waits for another epoch
        std::vector<int64_t> expected(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(used));
        std::sort(seen.begin(), seen.end());
        std::sort(expected.begin(), expected.end());
        CHECK(seen == expected);
      }
    }
  }
}

TEST_CASE("a global batch holds the same samples whatever the world size", "[data]") {
  const std::vector<int64_t> order = epoch_order(5, 0, 101);
  const auto single = rank_share(order, 12, 1, 0);
  for (int world : {2, 3, 4, 6, 12}) {
    for (int64_t step = 0; step < 8; ++step) {
      std::vector<int64_t> batch;
      for (int r = 0; r < world; ++r) {
        const auto share = rank_share(order, 12, world, r);
        const int64_t per_rank = 12 / world;
        batch.insert(batch.end(), share.begin() + step * per_rank, share.begin() + (step + 1) * per_rank);
      }
      CHECK(batch == std::vector<int64_t>(single.begin() + step * 12, single.begin() + (step + 1) * 12));
    }
  }
}

TEST_CASE("evaluation shards cover every sample once", "[data]") {
  for (size_t n : {0, 1, 5, 97}) {
    for (int world = 1; world <= 8; ++world) {
      std::vector<int64_t> seen;
      for (int r = 0; r < world; ++r) {
        const auto share = eval_share(n, world, r);
        seen.insert(seen.end(), share.begin(), share.end());
      }
      std::sort(seen.begin(), seen.end());
      std::vector<int64_t> expected(n);
      std::iota(expected.begin(), expected.end(), int64_t{0});
      CHECK(seen == expected);
    }
  }
}
