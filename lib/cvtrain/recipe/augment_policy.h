// Automatic augmentation policies as timm spells them ("rand-m9-mstd0.5-inc1", "original", "3a"),
// and torchvision's TrivialAugmentWide ("ta_wide"), parsed into the ops, probabilities and magnitudes that data/auto_augment draws from. Torch- and
// YAML-free, so a recipe's policy is checked when the recipe loads.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace cvtrain {

// timm's op names (auto_augment.py NAME_TO_OP); the "Increasing" variants grow stronger with the
// magnitude, the plain ones of the original papers partly weaker.
enum class AugmentOp {
  kAutoContrast, kEqualize, kInvert, kRotate,
  kPosterize, kPosterizeIncreasing, kPosterizeOriginal,
  kSolarize, kSolarizeIncreasing, kSolarizeAdd,
  kColor, kColorIncreasing, kContrast, kContrastIncreasing,
  kBrightness, kBrightnessIncreasing, kSharpness, kSharpnessIncreasing,
  kShearX, kShearY, kTranslateXRel, kTranslateYRel,
  kDesaturate, kGaussianBlurRand,
  // torchvision's _apply_op: shear by a factor about the origin, translate by whole pixels about
  // the centre (its affine matrix), and Identity.
  kTorchvisionShearX, kTorchvisionShearY, kTorchvisionTranslateX, kTorchvisionTranslateY, kIdentity,
};

const char* augment_op_name(AugmentOp op);
std::optional<AugmentOp> augment_op_named(const std::string& name);

struct PolicyOp {
  AugmentOp op = AugmentOp::kAutoContrast;
  double prob = 0.5;       // chance the op is applied once chosen
  double magnitude = 10;   // timm's level, 0..10 unless magnitude_max says otherwise
};

struct AugmentPolicy {
  enum class Kind { kNone, kRand, kAuto, kTrivial };
  Kind kind = Kind::kNone;
  std::string spelled;  // the recipe's text; empty: no automatic augmentation
  // kRand (RandAugment): num_layers ops drawn from `ops` with replacement, or by `weights`
  // without replacement.
  std::vector<PolicyOp> ops;
  std::vector<double> weights;
  int num_layers = 2;
  // kAuto (AutoAugment, 3-Augment): one sub-policy drawn uniformly, its ops applied in order.
  std::vector<std::vector<PolicyOp>> sub_policies;
  double magnitude_std = 0;   // Gaussian noise on each magnitude; infinity: uniform in [0, magnitude]
  double magnitude_max = 10;  // magnitudes are clipped to [0, magnitude_max]
  // kTrivial (TrivialAugmentWide): one of torchvision's 14 ops, uniformly, at one of its 31 magnitude
  // bins, negated half the time for the signed ops; the tables are torchvision's (data/auto_augment).
};

// Parses timm's policy string:
//   rand-SECTIONS  RandAugment; sections m<int> magnitude (10), n<int> ops per image (2),
//                  p<float> chance of each (0.5), mstd<float> magnitude noise (>100: uniform),
//                  mmax<int> magnitude bound (10), inc<0|1> increasing ops, t<weights|3a|3aw> op set
//   original[-mstd<float>]  AutoAugment's ImageNet policy
//   3a[-mstd<float>]        DeiT III's three-augment: solarize, grayscale or Gaussian blur
//   ta_wide                 torchvision's TrivialAugmentWide (nearest resampling, black fill, as torchvision)
// An empty text is no policy. Throws std::invalid_argument naming the part it cannot read.
AugmentPolicy parse_augment_policy(const std::string& text);

}  // namespace cvtrain
