// Sliding-window inference against mmseg's window positions and averaging.
#include "torch_catch.h"

#include <ATen/ATen.h>

#include <utility>
#include <vector>

#include "cvtrain/train/sliding_window.h"

using namespace cvtrain;

TEST_CASE("sliding windows cover the image at mmseg's positions and average the overlaps", "[train]") {
  const at::Tensor images = at::arange(2 * 3 * 10 * 13, at::kFloat).view({2, 3, 10, 13}).remainder(17);
  const SlidingWindow w{4, 6, 3, 4};
  std::vector<std::pair<int64_t, int64_t>> shapes;
  const auto identity = [&](const at::Tensor& x) {
    shapes.emplace_back(x.size(2), x.size(3));
    return x.clone();
  };
  // An identity model: every overlap averages equal whole numbers, exactly.
  CHECK(at::equal(slide_logits(identity, images, w), images));
  // Rows: ceil((10 - 4) / 3) + 1 = 3 windows ([0,4) [3,7) [6,10)); columns: ceil((13 - 6) / 4) + 1 = 3 ([0,6) [4,10) [7,13)).
  CHECK(shapes.size() == 9);
  for (const auto& [h, wd] : shapes) CHECK((h == 4 && wd == 6));
  // What each pixel counts: a model of ones gives ones; one whose windows add their own index gives
  // the mean of the indices of the windows over each pixel.
  int64_t index = 0;
  const auto numbered = [&](const at::Tensor& x) { return at::full({x.size(0), 1, x.size(2), x.size(3)}, static_cast<float>(index++)); };
  const at::Tensor mean_index = slide_logits(numbered, images, w);
  CHECK(mean_index[0][0][0][0].item<float>() == 0.0f);                           // window (row 0, column 0) alone
  CHECK(mean_index[0][0][3][4].item<float>() == Approx((0 + 1 + 3 + 4) / 4.0));  // under four windows
  CHECK(mean_index[0][0][9][12].item<float>() == 8.0f);                          // the last window alone
  const at::Tensor small = at::ones({1, 3, 3, 5});
  shapes.clear();
  CHECK(at::equal(slide_logits(identity, small, w), small));  // smaller than the window: one window of its size
  CHECK(shapes == std::vector<std::pair<int64_t, int64_t>>{{3, 5}});
}
