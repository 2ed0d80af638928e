// Epoch order: a permutation, reproducible, different per epoch and seed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

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

TEST_CASE("repeated augmentation: each sample k times per global batch, copies on different ranks", "[data]") {
  const std::vector<int64_t> order = epoch_order(3, 1, 100);
  const int64_t g = 12, k = 3;
  const std::vector<int64_t> repeated = repeated_order(order, k, g);
  REQUIRE(repeated.size() == 96);  // 8 full global batches: the epoch keeps its length
  CHECK(repeated_order(order, 1, g) == order);
  for (int64_t s = 0; s < 8; ++s) {
    std::map<int64_t, std::set<int64_t>> copies;  // dataset index -> copy numbers
    for (int64_t slot = 0; slot < g; ++slot) {
      const int64_t entry = repeated[static_cast<size_t>(s * g + slot)];
      copies[dataset_index(entry)].insert(entry >> kCopyShift);
    }
    REQUIRE(copies.size() == 4);  // the next g / k samples of the permutation
    for (const auto& [index, copy_numbers] : copies) {
      CHECK(copy_numbers == std::set<int64_t>{0, 1, 2});
      CHECK(std::find(order.begin() + s * 4, order.begin() + (s + 1) * 4, index) != order.begin() + (s + 1) * 4);
    }
  }
  // With k ranks, every rank holds one copy of each of the batch's samples.
  for (int r = 0; r < 3; ++r) {
    const auto share = rank_share(repeated, g, 3, r);
    std::set<int64_t> indices, copy_numbers;
    for (int64_t i = 0; i < 4; ++i) {
      indices.insert(dataset_index(share[static_cast<size_t>(i)]));
      copy_numbers.insert(share[static_cast<size_t>(i)] >> kCopyShift);
    }
    CHECK(indices.size() == 4);
    CHECK(copy_numbers == std::set<int64_t>{r});
  }
  // A global batch that k does not divide: the last samples of the batch get a copy fewer.
  const std::vector<int64_t> uneven = repeated_order(order, 3, 10);
  std::map<int64_t, int> count;
  for (int64_t slot = 0; slot < 10; ++slot) ++count[dataset_index(uneven[static_cast<size_t>(slot)])];
  CHECK(count.size() == 4);
  CHECK(count[order[0]] == 3);
  CHECK(count[order[3]] == 2);
}
