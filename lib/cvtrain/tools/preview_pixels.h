// What the previews share: the step's normalised inputs turned back into viewable pixels, and the
// grid's geometry.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace cvtrain {

// The preview grids' tiles: small ones enlarged (nearest neighbour) to at least kPreviewMinTile a
// side, a band of kPreviewLabelBand pixels of text under each, kPreviewGap pixels between them.
constexpr int kPreviewMinTile = 96;
constexpr int kPreviewLabelBand = 16;
constexpr int kPreviewGap = 4;

// uint8 [N, H, W, 3] from normalised float [N, C, H, W] (data.mean, data.std undone; gray made RGB).
at::Tensor viewable_pixels(const at::Tensor& normalised, const std::vector<double>& mean, const std::vector<double>& std);

}  // namespace cvtrain
