// Mixup/CutMix: the random draws come from SplitMix64 so they are keyed like everything else.
#include "cvtrain/data/batch_mix.h"

#include <ATen/ATen.h>

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

at::Tensor smoothed_one_hot(const at::Tensor& labels, int64_t num_classes, double smoothing) {
  const double off = smoothing / static_cast<double>(num_classes);
  const at::Tensor one_hot = at::one_hot(labels, num_classes).to(at::kFloat);
  return one_hot.mul(1.0 - smoothing).add_(off);
}

// Pastes a box of about (1 - lambda) of the area from the reversed batch; returns the exact
// fraction of the area left untouched.
double cut_and_paste(at::Tensor& images, double lambda, SplitMix64& rng) {
  const int64_t h = images.size(2), w = images.size(3);
  const double ratio = std::sqrt(1.0 - lambda);
  const auto cut_h = static_cast<int64_t>(static_cast<double>(h) * ratio);
  const auto cut_w = static_cast<int64_t>(static_cast<double>(w) * ratio);
  const auto cy = static_cast<int64_t>(rng.below(static_cast<uint64_t>(h)));
  const auto cx = static_cast<int64_t>(rng.below(static_cast<uint64_t>(w)));
  const int64_t y0 = std::clamp<int64_t>(cy - cut_h / 2, 0, h), y1 = std::clamp<int64_t>(cy + cut_h / 2, 0, h);
  const int64_t x0 = std::clamp<int64_t>(cx - cut_w / 2, 0, w), x1 = std::clamp<int64_t>(cx + cut_w / 2, 0, w);
  if (y1 > y0 && x1 > x0) {
    using at::indexing::Slice;
    const at::Tensor patch = images.flip(0).index({Slice(), Slice(), Slice(y0, y1), Slice(x0, x1)});
    images.index_put_({Slice(), Slice(), Slice(y0, y1), Slice(x0, x1)}, patch);
  }
  return 1.0 - static_cast<double>((y1 - y0) * (x1 - x0)) / static_cast<double>(h * w);
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

MixedBatch mix_batch(const at::Tensor& images, const at::Tensor& labels, int64_t num_classes, const AugmentSpec& a,
                     uint64_t key) {
  SplitMix64 rng(key);
  MixedBatch out{images.clone(), smoothed_one_hot(labels, num_classes, a.label_smoothing), 1.0};
  if (!mixing_enabled(a) || rng.uniform() >= a.mix_prob) return out;
  const bool cutmix = a.cutmix > 0 && (a.mixup <= 0 || rng.uniform() < a.switch_prob);
  const double lambda = beta_sample(cutmix ? a.cutmix : a.mixup, rng.next());
  if (cutmix) {
    out.lambda = cut_and_paste(out.images, lambda, rng);
  } else {
    out.images.mul_(lambda).add_(images.flip(0), 1.0 - lambda);
    out.lambda = lambda;
  }
  const at::Tensor reversed = out.targets.flip(0);
  out.targets.mul_(out.lambda).add_(reversed, 1.0 - out.lambda);
  return out;
}

}  // namespace cvtrain
