// timm's AugmentOp.__call__ and its LEVEL_TO_ARG functions, with Python's random module replaced by
// the sample's SplitMix64 stream, drawn in the order timm draws: the op choice, then per op whether
// it applies, the magnitude noise, the sign, the interpolation and the blur radius. TrivialAugmentWide
// draws as torchvision's forward does: the op, its magnitude bin, the sign.
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

// CPython's math.radians and math.degrees: one product with its rounded constant.
double radians(double degrees) { return degrees * (M_PI / 180.0); }
double degrees_of(double radians) { return radians * (180.0 / M_PI); }

// torchvision's _get_inverse_affine_matrix at scale 1 and no rotation, operation for operation,
// then F.affine on a PIL image: Image.transform with that matrix.
void torchvision_affine(PixelView image, double cx, double cy, double tx, double ty, double shear_x_degrees, double shear_y_degrees,
                        Resample resample, const uint8_t* fill) {
  const double rot = radians(0.0), sx = radians(shear_x_degrees), sy = radians(shear_y_degrees);
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  double m[6] = {d / 1.0, -b / 1.0, 0.0 / 1.0, -c / 1.0, a / 1.0, 0.0 / 1.0};
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  affine_transform(image, m, resample, fill);
}

// torch.linspace(start, end, 31) in float32, as ATen's CPU kernel computes it (the products fused
// into the additions, as its AVX2 build compiles them): element `bin` of the op's magnitude table.
double linspace_bin(float start, float end, int bin) {
  constexpr int kBins = 31;
  const float step = (end - start) / static_cast<float>(kBins - 1);
  return bin < kBins / 2 ? std::fmaf(step, static_cast<float>(bin), start) : std::fmaf(-step, static_cast<float>(kBins - bin - 1), end);
}

// TrivialAugmentWide._augmentation_space, in its order; `signed` ops are negated half the time.
struct TrivialOp {
  AugmentOp op;
  float start, end;  // the magnitude table's ends; equal: no table (no bin is drawn)
  bool is_signed;
};
constexpr TrivialOp kTrivialOps[] = {
    {AugmentOp::kIdentity, 0, 0, false},
    {AugmentOp::kTorchvisionShearX, 0, 0.99f, true},
    {AugmentOp::kTorchvisionShearY, 0, 0.99f, true},
    {AugmentOp::kTorchvisionTranslateX, 0, 32.0f, true},
    {AugmentOp::kTorchvisionTranslateY, 0, 32.0f, true},
    {AugmentOp::kRotate, 0, 135.0f, true},
    {AugmentOp::kBrightness, 0, 0.99f, true},
    {AugmentOp::kColor, 0, 0.99f, true},
    {AugmentOp::kContrast, 0, 0.99f, true},
    {AugmentOp::kSharpness, 0, 0.99f, true},
    {AugmentOp::kPosterize, 8, 2, false},  // 8 - round(bin / 5): not a linspace
    {AugmentOp::kSolarize, 255.0f, 0, false},
    {AugmentOp::kAutoContrast, 0, 0, false},
    {AugmentOp::kEqualize, 0, 0, false},
};

// The op's argument from torchvision's magnitude, as _apply_op turns it into a call.
double trivial_argument(AugmentOp op, double magnitude) {
  switch (op) {
    case AugmentOp::kBrightness:
    case AugmentOp::kColor:
    case AugmentOp::kContrast:
    case AugmentOp::kSharpness: return 1.0 + magnitude;  // adjust_*(img, 1 + magnitude)
    case AugmentOp::kTorchvisionTranslateX:
    case AugmentOp::kTorchvisionTranslateY:
    case AugmentOp::kPosterize: return std::trunc(magnitude);  // int(magnitude)
    case AugmentOp::kSolarize: return std::ceil(magnitude);    // i < t for integer i is i < ceil(t)
    default: return magnitude;
  }
}

DrawnOp draw_trivial_augment(SplitMix64& rng, AugmentInterpolation interpolation) {
  constexpr uint64_t kOps = sizeof(kTrivialOps) / sizeof(kTrivialOps[0]);
  const TrivialOp& spec = kTrivialOps[rng.below(kOps)];
  double magnitude = 0;
  if (spec.start != spec.end) {
    const int bin = static_cast<int>(rng.below(31));
    magnitude = spec.op == AugmentOp::kPosterize ? 8 - std::nearbyint(static_cast<float>(bin) / (30.0f / 6.0f))
                                                 : linspace_bin(spec.start, spec.end, bin);
  }
  if (spec.is_signed && rng.below(2) == 1) magnitude = -magnitude;
  DrawnOp drawn{spec.op, trivial_argument(spec.op, magnitude), Resample::kNearest};
  if (interpolation == AugmentInterpolation::kBilinear) drawn.resample = Resample::kBilinear;
  if (interpolation == AugmentInterpolation::kBicubic) drawn.resample = Resample::kBicubic;
  return drawn;
}

}  // namespace

std::vector<DrawnOp> draw_augment_ops(const AugmentPolicy& policy, uint64_t key, AugmentInterpolation interpolation) {
  std::vector<DrawnOp> drawn;
  if (policy.kind == AugmentPolicy::Kind::kNone) return drawn;
  SplitMix64 rng(key);
  if (policy.kind == AugmentPolicy::Kind::kTrivial) return {draw_trivial_augment(rng, interpolation)};
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
    case AugmentOp::kTorchvisionShearX: return torchvision_affine(image, 0, 0, 0, 0, degrees_of(std::atan(v)), 0, r, fill);
    case AugmentOp::kTorchvisionShearY: return torchvision_affine(image, 0, 0, 0, 0, 0, degrees_of(std::atan(v)), r, fill);
    case AugmentOp::kTorchvisionTranslateX: return torchvision_affine(image, image.width * 0.5, image.height * 0.5, v, 0, 0, 0, r, fill);
    case AugmentOp::kTorchvisionTranslateY: return torchvision_affine(image, image.width * 0.5, image.height * 0.5, 0, v, 0, 0, r, fill);
    case AugmentOp::kIdentity: return;
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
