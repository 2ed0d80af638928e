// timm's RandomErasing on a normalised device batch, as its prefetching loader applies it: the
// boxes planned per sample on the host (data/erasing_plan.h), the fill drawn on the device.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "cvtrain/data/erasing_plan.h"

namespace cvtrain {

enum class EraseMode;

// The boxes of a batch as int32 [B, K, 4] (top, left, height, width; height 0: no box), K the
// most boxes any sample has; undefined when no sample is erased.
at::Tensor erase_box_tensor(const std::vector<std::vector<EraseBox>>& boxes, bool pinned);

// Fills the boxes of float `images` [B, C, H, W] in place: zeros (const), one normal colour per
// box (rand) or normal noise per pixel (pixel). The noise comes from a generator seeded with `key`.
void erase_batch(at::Tensor& images, const at::Tensor& boxes, EraseMode mode, uint64_t key);

}  // namespace cvtrain
