// Sliding-window inference (data.eval_mode: slide), as mmseg's slide_inference: windows every
// stride pixels, the last of each row and column moved back to end at the image's edge, each
// window's logits added where it lies and divided by how many windows covered each pixel.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>

#include "cvtrain/recipe/task_checks.h"

namespace cvtrain {

// The logits [B, K, H, W] of `images` [B, C, H, W]: `forward` maps a window's images to its logits
// at the window's size. An image smaller than the window is one window of its own size.
at::Tensor slide_logits(const std::function<at::Tensor(const at::Tensor&)>& forward, const at::Tensor& images, const SlidingWindow& window);

}  // namespace cvtrain
