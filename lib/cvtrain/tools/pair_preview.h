// `cvtrain data preview` of segmentation pairs: the first training crops of an epoch exactly as the
// step receives them (joint resize, crop, flip, photometric distortion, padding), each drawn beside
// its mask laid over it in the dataset's colours, so a team sees that masks stay on their pixels.
#pragma once

#include "cvtrain/tools/sample_preview.h"

namespace cvtrain {

// Called by write_sample_preview for task: segmentation.
PreviewResult write_pair_preview(const Recipe& recipe, const PreviewOptions& options);

}  // namespace cvtrain
