// Window by window, in mmseg's order (rows, then columns), summed in float.
#include "cvtrain/train/sliding_window.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace cvtrain {

at::Tensor slide_logits(const std::function<at::Tensor(const at::Tensor&)>& forward, const at::Tensor& images, const SlidingWindow& w) {
  const int64_t height = images.size(2), width = images.size(3);
  const int64_t rows = std::max<int64_t>(height - w.height + w.stride_height - 1, 0) / w.stride_height + 1;
  const int64_t columns = std::max<int64_t>(width - w.width + w.stride_width - 1, 0) / w.stride_width + 1;
  at::Tensor sum, count = at::zeros({1, 1, height, width}, images.options().dtype(at::kFloat));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < columns; ++c) {
      const int64_t y2 = std::min(r * w.stride_height + w.height, height), x2 = std::min(c * w.stride_width + w.width, width);
      const int64_t y1 = std::max<int64_t>(y2 - w.height, 0), x1 = std::max<int64_t>(x2 - w.width, 0);
      const at::Tensor logits = forward(images.narrow(2, y1, y2 - y1).narrow(3, x1, x2 - x1)).to(at::kFloat);
      if (!sum.defined()) sum = at::zeros({images.size(0), logits.size(1), height, width}, logits.options());
      sum.narrow(2, y1, y2 - y1).narrow(3, x1, x2 - x1).add_(logits);
      count.narrow(2, y1, y2 - y1).narrow(3, x1, x2 - x1).add_(1);
    }
  return sum / count;
}

}  // namespace cvtrain
