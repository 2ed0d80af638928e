// Mixup/CutMix draws from SplitMix64, keyed like the per-sample augmentation.
#include "cvtrain/data/mix_plan.h"

#include <algorithm>
#include <cmath>

#include "cvtrain/core/rng.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {
namespace {

double normal(SplitMix64& rng) {
  const double u1 = 1.0 - rng.uniform();  // (0, 1]: log stays finite
  const double u2 = rng.uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

// Marsaglia and Tsang (2000); shape < 1 through Gamma(shape + 1) * U^(1/shape).
double gamma_sample(double shape, SplitMix64& rng) {
  if (shape < 1) return gamma_sample(shape + 1, rng) * std::pow(1.0 - rng.uniform(), 1.0 / shape);
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x, v;
    do {
      x = normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = 1.0 - rng.uniform();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

// timm's rand_bbox (1.0's: cut_h rows and cut_w columns before clipping, where the original CutMix
// code and timm before it lost one of an odd count): a box of about (1 - lambda) of the area
// centred on a uniform pixel, clipped to the image; the plan's lambda becomes the share of the
// area it leaves.
void place_box(MixPlan& plan, int64_t h, int64_t w, SplitMix64& rng) {
  const double ratio = std::sqrt(1.0 - plan.lambda);
  const auto cut_h = static_cast<int64_t>(static_cast<double>(h) * ratio);
  const auto cut_w = static_cast<int64_t>(static_cast<double>(w) * ratio);
  const auto cy = static_cast<int64_t>(rng.below(static_cast<uint64_t>(h)));
  const auto cx = static_cast<int64_t>(rng.below(static_cast<uint64_t>(w)));
  plan.top = std::clamp<int64_t>(cy - cut_h / 2, 0, h);
  plan.bottom = std::clamp<int64_t>(cy + (cut_h + 1) / 2, 0, h);
  plan.left = std::clamp<int64_t>(cx - cut_w / 2, 0, w);
  plan.right = std::clamp<int64_t>(cx + (cut_w + 1) / 2, 0, w);
  plan.lambda = 1.0 - static_cast<double>((plan.bottom - plan.top) * (plan.right - plan.left)) / static_cast<double>(h * w);
}

}  // namespace

bool mixing_enabled(const AugmentSpec& a) { return (a.mixup > 0 || a.cutmix > 0) && a.mix_prob > 0; }

uint64_t mix_key(uint64_t seed, int64_t epoch, int64_t first_sample) {
  constexpr uint64_t kMixStream = 0x6d69786d6978ULL;  // keeps mixing draws apart from per-sample ones
  return sample_key(seed ^ kMixStream, static_cast<uint64_t>(epoch), static_cast<uint64_t>(first_sample));
}

double beta_sample(double alpha, uint64_t key) {
  SplitMix64 rng(key);
  const double x = gamma_sample(alpha, rng), y = gamma_sample(alpha, rng);
  return x / (x + y);
}

MixPlan plan_mix(const AugmentSpec& a, uint64_t key, int64_t height, int64_t width) {
  SplitMix64 rng(key);
  MixPlan plan;
  if (!mixing_enabled(a) || rng.uniform() >= a.mix_prob) return plan;
  const bool cutmix = a.cutmix > 0 && (a.mixup <= 0 || rng.uniform() < a.switch_prob);
  const double lambda = beta_sample(cutmix ? a.cutmix : a.mixup, rng.next());
  // A factor of exactly 1 leaves the batch as it is, and timm skips it as unmixed: a small alpha's
  // Beta draws round to 1 often (about 1 % at RSB's Mixup 0.1).
  if (lambda == 1.0) return plan;
  plan.kind = cutmix ? MixKind::kCutMix : MixKind::kMixup;
  plan.lambda = lambda;
  if (cutmix) place_box(plan, height, width, rng);
  return plan;
}

}  // namespace cvtrain
