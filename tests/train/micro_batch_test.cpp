// train.micro_batch: auto's search: the largest divisor that fits, in few trials.
#include "torch_catch.h"

#include <algorithm>
#include <vector>

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
  // A model that trains on 2 or more images (DeepLabV3's pooled BatchNorm) is never tried on 1.
  std::vector<int64_t> tried;
  const auto recording = [&tried](int64_t m) {
    tried.push_back(m);
    return m <= 1;
  };
  CHECK(largest_fitting_divisor(8, recording, 2) == 0);
  CHECK(std::find(tried.begin(), tried.end(), 1) == tried.end());
  CHECK(largest_fitting_divisor(12, up_to(5), 2) == 4);
}
