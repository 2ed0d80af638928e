// Where each augment key's operation runs, declared once for every key of the section: what the
// sample's crop plan holds (which a GPU decoder renders itself), what needs the CPU's decoded
// pixels, what works on the whole batch on the device, on the loss's targets, or on the sample order.
#pragma once

#include <vector>

#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

enum class AugmentPlace {
  kCropPlan,     // crop, resize filter and flips: rendered by the CPU workers or, from JPEGs, on the GPU
  kCpuPixels,    // needs the decoded pixels on the CPU: data.decoder nvjpeg cannot serve it
  kDeviceBatch,  // applied to the batch on the device (Mixup/CutMix, random erasing's fill)
  kTargets,      // the loss's targets (label smoothing)
  kSampleOrder,  // which samples an epoch draws (repeated augmentation)
};

struct AugmentPlacement {
  const char* key;  // as the recipe spells it, "augment.color_jitter"
  AugmentPlace place;
  // Whether the key turns its operation on; null for a key that only tunes one (mix_prob, the
  // erasing box's limits, an interpolation), which takes its operation's place.
  bool (*active)(const AugmentSpec&);
};

// Every key of the augment section, in the schema's order.
const std::vector<AugmentPlacement>& augment_placements();

// The first augment key whose operation is on and needs the CPU's decoded pixels, or null.
const char* augment_needing_cpu_pixels(const AugmentSpec& augment);

}  // namespace cvtrain
