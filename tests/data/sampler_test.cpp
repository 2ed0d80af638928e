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
