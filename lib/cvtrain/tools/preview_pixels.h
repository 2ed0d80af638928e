// What the previews share: the step's normalised inputs turned back into viewable pixels.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace cvtrain {

// uint8 [N, H, W, 3] from normalised float [N, C, H, W] (data.mean, data.std undone; gray made RGB).
at::Tensor viewable_pixels(const at::Tensor& normalised, const std::vector<double>& mean, const std::vector<double>& std);

}  // namespace cvtrain
