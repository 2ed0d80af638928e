// Where timm's RandomErasing erases one sample: a pure function of the sample's key, planned by
// the loader's workers on the host; the boxes are filled on the device (data/batch_erasing.h).
#pragma once

#include <cstdint>
#include <vector>

namespace cvtrain {

struct RandomErasingSpec;

struct EraseBox {
  int top = 0, left = 0, height = 0, width = 0;
};

// timm's RandomErasing._erase: with probability `prob`, between 1 and `count` boxes (each of
// [min_area, max_area] / count of the image, log-uniform aspect, ten tries to fit).
std::vector<EraseBox> plan_erasing(const RandomErasingSpec& spec, int height, int width, uint64_t key);

}  // namespace cvtrain
