// timm's AugmentOp.__call__ and its LEVEL_TO_ARG functions, with Python's random module replaced by
// the sample's SplitMix64 stream, drawn in the order timm draws: the op choice, then per op whether
// it applies, the magnitude noise, the sign, the interpolation and the blur radius.
#include "cvtrain/data/auto_augment.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "cvtrain/core/rng.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {
namespace {

constexpr double kLevelDenominator = 10;   // timm's _LEVEL_DENOM
constexpr double kTranslateFraction = 0.45;  // timm's default translate_pct

double gaussian(SplitMix64& rng, double mean, double std) {
  const double u1 = 1.0 - rng.uniform(), u2 = rng.uniform();  // u1 in (0, 1]
  return mean + std * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

double randomly_negated(double v, SplitMix64& rng) { return rng.uniform() > 0.5 ? -v : v; }

bool is_geometric(AugmentOp op) {
  return op == AugmentOp::kRotate || op == AugmentOp::kShearX || op == AugmentOp::kShearY || op == AugmentOp::kTranslateXRel ||
         op == AugmentOp::kTranslateYRel;
}

// LEVEL_TO_ARG: the op's argument at `level` (0..10 after noise and clipping).
double argument_at(AugmentOp op, double level, SplitMix64& rng) {
  const double l = level / kLevelDenominator;
  const auto solarize_threshold = [&] { return std::min(256, static_cast<int>(l * 256)); };
  switch (op) {
    case AugmentOp::kRotate: return randomly_negated(l * 30.0, rng);
    case AugmentOp::kPosterize: return static_cast<int>(l * 4);
    case AugmentOp::kPosterizeIncreasing: return 4 - static_cast<int>(l * 4);
    case AugmentOp::kPosterizeOriginal: return static_cast<int>(l * 4) + 4;
    case AugmentOp::kSolarize: return solarize_threshold();
    case AugmentOp::kSolarizeIncreasing: return 256 - solarize_threshold();
    case AugmentOp::kSolarizeAdd: return std::min(128, static_cast<int>(l * 110));
    case AugmentOp::kColor:
    case AugmentOp::kContrast:
    case AugmentOp::kBrightness:
    case AugmentOp::kSharpness: return l * 1.8 + 0.1;
    case AugmentOp::kColorIncreasing:
    case AugmentOp::kContrastIncreasing:
    case AugmentOp::kBrightnessIncreasing:
    case AugmentOp::kSharpnessIncreasing: return std::max(0.1, 1.0 + randomly_negated(l * 0.9, rng));
    case AugmentOp::kShearX:
    case AugmentOp::kShearY: return randomly_negated(l * 0.3, rng);
    case AugmentOp::kTranslateXRel:
    case AugmentOp::kTranslateYRel: return randomly_negated(l * kTranslateFraction, rng);
    case AugmentOp::kDesaturate: return std::clamp(0.5 + 0.5 * l, 0.5, 1.0);
    case AugmentOp::kGaussianBlurRand: return std::clamp(l, 0.0, 1.0);
    default: return 0;  // AutoContrast, Equalize, Invert take none
  }
}

// One AugmentOp call; false when its probability says skip.
bool draw_op(const PolicyOp& spec, const AugmentPolicy& policy, AugmentInterpolation interpolation, SplitMix64& rng, DrawnOp& out) {
  if (spec.prob < 1.0 && rng.uniform() > spec.prob) return false;
  double magnitude = spec.magnitude;
  if (policy.magnitude_std == std::numeric_limits<double>::infinity())
    magnitude = rng.uniform(0, magnitude);
  else if (policy.magnitude_std > 0)
    magnitude = gaussian(rng, magnitude, policy.magnitude_std);
  const double upper = policy.magnitude_max > 0 ? policy.magnitude_max : kLevelDenominator;
  magnitude = std::clamp(magnitude, 0.0, upper);
  out.op = spec.op;
  out.argument = argument_at(spec.op, magnitude, rng);
  if (is_geometric(spec.op))
    out.resample = interpolation == AugmentInterpolation::kBicubic  ? Resample::kBicubic
                   : interpolation == AugmentInterpolation::kBilinear ? Resample::kBilinear
                   : rng.uniform() < 0.5                              ? Resample::kBilinear
                                                                      : Resample::kBicubic;
  if (spec.op == AugmentOp::kGaussianBlurRand) out.argument = rng.uniform(0.1, 2.0 * out.argument);
  return true;
}

// numpy's choice(ops, n, replace=False, p=weights): successive draws, each renormalised.
std::vector<size_t> weighted_without_replacement(std::vector<double> weights, int count, SplitMix64& rng) {
  std::vector<size_t> chosen;
  for (int k = 0; k < count; ++k) {
    double left = rng.uniform(0, std::accumulate(weights.begin(), weights.end(), 0.0));
    size_t i = 0;
    while (i + 1 < weights.size() && (weights[i] == 0 || left >= weights[i])) left -= weights[i++];
    chosen.push_back(i);
    weights[i] = 0;
  }
  return chosen;
}

std::vector<const PolicyOp*> chosen_ops(const AugmentPolicy& policy, SplitMix64& rng) {
  std::vector<const PolicyOp*> ops;
  if (policy.kind == AugmentPolicy::Kind::kAuto) {
    for (const PolicyOp& op : policy.sub_policies[rng.below(policy.sub_policies.size())]) ops.push_back(&op);
  } else if (!policy.weights.empty()) {
    for (size_t i : weighted_without_replacement(policy.weights, policy.num_layers, rng)) ops.push_back(&policy.ops[i]);
  } else {
    for (int k = 0; k < policy.num_layers; ++k) ops.push_back(&policy.ops[rng.below(policy.ops.size())]);
  }
  return ops;
}

void affine(PixelView image, double a, double b, double c, double d, double e, double f, Resample resample, const uint8_t* fill) {
  const double m[6] = {a, b, c, d, e, f};
  affine_transform(image, m, resample, fill);
}

}  // namespace

std::vector<DrawnOp> draw_augment_ops(const AugmentPolicy& policy, uint64_t key, AugmentInterpolation interpolation) {
  std::vector<DrawnOp> drawn;
  if (policy.kind == AugmentPolicy::Kind::kNone) return drawn;
  SplitMix64 rng(key);
  for (const PolicyOp* spec : chosen_ops(policy, rng)) {
    DrawnOp op;
    if (draw_op(*spec, policy, interpolation, rng, op)) drawn.push_back(op);
  }
  return drawn;
}

void apply_augment_op(PixelView image, const DrawnOp& op, const uint8_t* fill) {
  const double v = op.argument;
  const Resample r = op.resample;
  switch (op.op) {
    case AugmentOp::kAutoContrast: return auto_contrast(image);
    case AugmentOp::kEqualize: return equalize(image);
    case AugmentOp::kInvert: return invert(image);
    case AugmentOp::kRotate: return rotate(image, v, r, fill);
    case AugmentOp::kPosterize:
    case AugmentOp::kPosterizeIncreasing:
    case AugmentOp::kPosterizeOriginal: return posterize(image, static_cast<int>(v));
    case AugmentOp::kSolarize:
    case AugmentOp::kSolarizeIncreasing: return solarize(image, static_cast<int>(v));
    case AugmentOp::kSolarizeAdd: return solarize_add(image, static_cast<int>(v), 128);
    case AugmentOp::kColor:
    case AugmentOp::kColorIncreasing: return enhance_color(image, v);
    case AugmentOp::kContrast:
    case AugmentOp::kContrastIncreasing: return enhance_contrast(image, v);
    case AugmentOp::kBrightness:
    case AugmentOp::kBrightnessIncreasing: return enhance_brightness(image, v);
    case AugmentOp::kSharpness:
    case AugmentOp::kSharpnessIncreasing: return enhance_sharpness(image, v);
    case AugmentOp::kShearX: return affine(image, 1, v, 0, 0, 1, 0, r, fill);
    case AugmentOp::kShearY: return affine(image, 1, 0, 0, v, 1, 0, r, fill);
    case AugmentOp::kTranslateXRel: return affine(image, 1, 0, v * image.width, 0, 1, 0, r, fill);
    case AugmentOp::kTranslateYRel: return affine(image, 1, 0, 0, 0, 1, v * image.height, r, fill);
    case AugmentOp::kDesaturate: return enhance_color(image, std::clamp(1.0 - v, 0.0, 1.0));
    case AugmentOp::kGaussianBlurRand: return gaussian_blur(image, v);
  }
}

std::vector<DrawnOp> draw_color_jitter(double strength, uint64_t key) {
  SplitMix64 rng(key);
  int order[4] = {0, 1, 2, 3};  // torch.randperm(4); 3 is hue, which stays off
  for (int i = 3; i > 0; --i) std::swap(order[i], order[rng.below(static_cast<uint64_t>(i + 1))]);
  double factors[3];
  for (double& f : factors) f = rng.uniform(std::max(0.0, 1.0 - strength), 1.0 + strength);
  constexpr AugmentOp kOps[3] = {AugmentOp::kBrightness, AugmentOp::kContrast, AugmentOp::kColor};
  std::vector<DrawnOp> drawn;
  for (int id : order)
    if (id < 3) drawn.push_back(DrawnOp{kOps[id], factors[id], Resample::kBilinear});
  return drawn;
}

bool jitters_with(const AugmentPolicy& policy) {
  return policy.kind == AugmentPolicy::Kind::kNone || policy.spelled.find("3a") != std::string::npos;
}

std::vector<uint8_t> augment_fill(const std::vector<double>& mean) {
  std::vector<uint8_t> fill;
  for (double m : mean) fill.push_back(static_cast<uint8_t>(std::clamp(std::nearbyint(255 * m), 0.0, 255.0)));
  return fill;
}

}  // namespace cvtrain
