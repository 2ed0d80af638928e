// timm's draws in timm's order, from the sample's SplitMix64 stream instead of Python's random.
#include "cvtrain/data/erasing_plan.h"

#include <cmath>

#include "cvtrain/core/rng.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

std::vector<EraseBox> plan_erasing(const RandomErasingSpec& spec, int height, int width, uint64_t key) {
  std::vector<EraseBox> boxes;
  SplitMix64 rng(key);
  if (spec.prob <= 0 || rng.uniform() > spec.prob) return boxes;
  const auto count = spec.count <= 1 ? 1 : static_cast<int>(1 + rng.below(static_cast<uint64_t>(spec.count)));
  const double area = static_cast<double>(height) * width;
  const double log_lo = std::log(spec.min_aspect), log_hi = std::log(1.0 / spec.min_aspect);
  for (int box = 0; box < count; ++box)
    for (int attempt = 0; attempt < 10; ++attempt) {
      const double target = rng.uniform(spec.min_area, spec.max_area) * area / count;
      const double aspect = std::exp(rng.uniform(log_lo, log_hi));
      const int h = static_cast<int>(std::nearbyint(std::sqrt(target * aspect)));  // Python's round: half to even
      const int w = static_cast<int>(std::nearbyint(std::sqrt(target / aspect)));
      if (w < width && h < height) {
        const int top = static_cast<int>(rng.below(static_cast<uint64_t>(height - h + 1)));
        const int left = static_cast<int>(rng.below(static_cast<uint64_t>(width - w + 1)));
        boxes.push_back({top, left, h, w});
        break;
      }
    }
  return boxes;
}

}  // namespace cvtrain
