// Mixup/CutMix plans: timm's choices per batch, a box inside the image whose area is the factor
// given up, all fixed by the key.
#include <catch2/catch.hpp>

#include <cmath>

#include "cvtrain/data/mix_plan.h"
#include "cvtrain/recipe/recipe.h"

using namespace cvtrain;

TEST_CASE("Beta draws have the right mean and spread", "[data]") {
  double sum = 0, sum_sq = 0;
  const int n = 4000;
  for (int k = 0; k < n; ++k) {
    const double x = beta_sample(1.0, static_cast<uint64_t>(k) * 7919);
    REQUIRE(x >= 0);
    REQUIRE(x <= 1);
    sum += x;
    sum_sq += x * x;
  }
  const double mean = sum / n, variance = sum_sq / n - mean * mean;
  CHECK(mean == Approx(0.5).margin(0.02));
  CHECK(variance == Approx(1.0 / 12).margin(0.01));  // Beta(1, 1) is uniform
  // alpha 0.2 puts most draws near 0 or 1.
  int extreme = 0;
  for (int k = 0; k < 1000; ++k) {
    const double x = beta_sample(0.2, static_cast<uint64_t>(k) + 1);
    extreme += (x < 0.1 || x > 0.9) ? 1 : 0;
  }
  CHECK(extreme > 600);
}

TEST_CASE("a CutMix plan's box lies in the image, keeps cut_h rows as timm 1.0 does, and its factor is the area left", "[data]") {
  AugmentSpec augment;
  augment.cutmix = 1.0;
  const int64_t height = 61, width = 97;
  int odd_heights = 0, inside = 0;
  for (uint64_t key = 1; key <= 2000; ++key) {
    const MixPlan plan = plan_mix(augment, key, height, width);
    REQUIRE(plan.kind == MixKind::kCutMix);  // CutMix alone, mix_prob 1: every batch is cut
    REQUIRE(0 <= plan.top);
    REQUIRE(plan.top <= plan.bottom);
    REQUIRE(plan.bottom <= height);
    REQUIRE(0 <= plan.left);
    REQUIRE(plan.left <= plan.right);
    REQUIRE(plan.right <= width);
    REQUIRE(plan.lambda == 1.0 - static_cast<double>((plan.bottom - plan.top) * (plan.right - plan.left)) / (height * width));
    if (plan.top > 0 && plan.bottom < height) {
      ++inside;
      odd_heights += (plan.bottom - plan.top) % 2;  // the box of before lost a row of an odd count: always even
    }
  }
  CHECK(inside > 200);
  CHECK(odd_heights > inside / 4);
  const MixPlan again = plan_mix(augment, 7, height, width);
  CHECK(again.top == plan_mix(augment, 7, height, width).top);
}

TEST_CASE("mix_prob leaves batches alone, switch_prob picks CutMix, one alpha alone picks its kind", "[data]") {
  AugmentSpec augment;
  augment.mixup = 0.8;
  augment.cutmix = 1.0;
  augment.mix_prob = 0.6;
  augment.switch_prob = 0.25;
  int none = 0, cut = 0, mixed = 0;
  for (uint64_t key = 1; key <= 4000; ++key) {
    const MixPlan plan = plan_mix(augment, key, 32, 32);
    none += plan.kind == MixKind::kNone;
    cut += plan.kind == MixKind::kCutMix;
    mixed += plan.kind == MixKind::kMixup;
    if (plan.kind == MixKind::kMixup) REQUIRE((plan.lambda > 0 && plan.lambda < 1));
  }
  CHECK(none / 4000.0 == Approx(0.4).margin(0.03));
  CHECK(cut / static_cast<double>(cut + mixed) == Approx(0.25).margin(0.03));
  augment.cutmix = 0;
  augment.mix_prob = 1;
  for (uint64_t key = 1; key <= 200; ++key) REQUIRE(plan_mix(augment, key, 32, 32).kind == MixKind::kMixup);
  augment.mixup = 0;
  CHECK_FALSE(mixing_enabled(augment));
  CHECK(plan_mix(augment, 1, 32, 32).kind == MixKind::kNone);
}
