// RandAugment, AutoAugment and 3-Augment on one sample after its crop and flip, as timm applies them
// to PIL images: the ops, their magnitudes and signs are drawn from the sample's own random stream
// (a pure function of seed, epoch and index), then run on its pixels (data/image_ops).
#pragma once

#include <cstdint>
#include <vector>

#include "cvtrain/data/image_ops.h"
#include "cvtrain/recipe/augment_policy.h"

namespace cvtrain {

enum class AugmentInterpolation;

// One op as it will run: timm's level already turned into the op's argument.
struct DrawnOp {
  AugmentOp op = AugmentOp::kAutoContrast;
  // Rotate: degrees; Posterize*: bits kept; Solarize*: threshold; SolarizeAdd: amount;
  // Color/Contrast/Brightness/Sharpness*: enhance factor; Shear*: shear factor;
  // Translate*Rel: fraction of the side; Desaturate: colour factor; GaussianBlurRand: radius.
  double argument = 0;
  Resample resample = Resample::kBilinear;  // of the geometric ops
};

// The ops `policy` applies to the sample keyed by `key`, in order (skipped ones left out).
std::vector<DrawnOp> draw_augment_ops(const AugmentPolicy& policy, uint64_t key, AugmentInterpolation interpolation);

// torchvision's ColorJitter(strength, strength, strength) as timm's --color-jitter: brightness,
// contrast and saturation factors uniform in [max(0, 1 - strength), 1 + strength], in a random
// order (hue off, as timm leaves it); the ops run as Brightness, Contrast and Color.
std::vector<DrawnOp> draw_color_jitter(double strength, uint64_t key);

// Whether timm applies colour jitter beside this policy: without one, or with 3-Augment.
bool jitters_with(const AugmentPolicy& policy);

// Runs one drawn op; `fill` (a value per channel) is what geometric ops leave where no pixel maps.
void apply_augment_op(PixelView image, const DrawnOp& op, const uint8_t* fill);

// timm's fill colour: the dataset mean on the 0..255 scale, rounded.
std::vector<uint8_t> augment_fill(const std::vector<double>& mean);

}  // namespace cvtrain
