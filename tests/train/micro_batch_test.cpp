// train.micro_batch: auto's search: the largest divisor that fits, in few trials.
#include "torch_catch.h"

#include "cvtrain/train/micro_batch.h"

using namespace cvtrain;

TEST_CASE("the micro-batch search takes the largest fitting divisor by bisection", "[train]") {
  int trials = 0;
  const auto up_to = [&](int64_t limit) {
    return [&trials, limit](int64_t m) {
      ++trials;
      return m <= limit;
    };
  };
  CHECK(largest_fitting_divisor(256, up_to(48)) == 32);  // 48 fits but does not divide 256
  CHECK(trials <= 4);                                      // 9 divisors of 256
  CHECK(largest_fitting_divisor(256, up_to(1000)) == 256);
  CHECK(largest_fitting_divisor(96, up_to(40)) == 32);    // 1 2 3 4 6 8 12 16 24 32 48 96
  CHECK(largest_fitting_divisor(97, up_to(50)) == 1);     // a prime: only 1 divides it below 97
  CHECK(largest_fitting_divisor(64, up_to(0)) == 0);      // nothing fits
}
