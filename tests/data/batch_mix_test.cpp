// Mixup/CutMix: soft targets that sum to one, images mixed as lambda says, draws keyed.
#include "torch_catch.h"

#include <ATen/ATen.h>

#include "cvtrain/data/batch_mix.h"
#include "cvtrain/recipe/recipe.h"

using namespace cvtrain;

namespace {

at::Tensor batch_images() { return at::arange(6 * 3 * 8 * 8, at::kFloat).view({6, 3, 8, 8}).div(1000); }
at::Tensor batch_labels() { return at::tensor(std::vector<int64_t>{0, 1, 2, 3, 4, 0}); }

}  // namespace

TEST_CASE("Mixup blends each image with the reversed batch, targets likewise", "[data]") {
  AugmentSpec augment;
  augment.mixup = 0.8;
  augment.label_smoothing = 0.1;
  const at::Tensor images = batch_images(), labels = batch_labels();
  const MixedBatch mixed = mix_batch(images, labels, 5, augment, 42);
  const double l = mixed.lambda;
  REQUIRE(l > 0);
  REQUIRE(l < 1);
  CHECK(at::allclose(mixed.images, images * l + images.flip(0) * (1 - l), 1e-5, 1e-6));
  CHECK(at::allclose(mixed.targets.sum(1), at::ones({6}), 1e-5, 1e-6));
  // Row 0 mixes label 0 with row 5's label 0: all of it on class 0, minus smoothing.
  CHECK(mixed.targets[0][0].item<float>() == Approx(0.9 + 0.02));
  // Row 1 (label 1) with row 4 (label 4).
  CHECK(mixed.targets[1][1].item<float>() == Approx(l * 0.9 + 0.02));
  CHECK(mixed.targets[1][4].item<float>() == Approx((1 - l) * 0.9 + 0.02));
  // The same key, the same mix; the input is left alone.
  CHECK(at::equal(mix_batch(images, labels, 5, augment, 42).images, mixed.images));
  CHECK(mix_batch(images, labels, 5, augment, 43).lambda != l);
  CHECK(at::equal(images, batch_images()));
}

TEST_CASE("CutMix pastes one box and weighs targets by the area kept", "[data]") {
  AugmentSpec augment;
  augment.cutmix = 1.0;
  const at::Tensor images = batch_images(), labels = batch_labels();
  for (uint64_t key = 1; key < 20; ++key) {
    const MixedBatch mixed = mix_batch(images, labels, 5, augment, key);
    const at::Tensor from_other = mixed.images.ne(images).any(1);  // [B, H, W]: pixels taken from the reversed batch
    const double pasted = from_other[1].to(at::kFloat).mean().item<double>();
    CHECK(1.0 - pasted == Approx(mixed.lambda).margin(1e-6));
    CHECK(at::allclose(mixed.targets.sum(1), at::ones({6}), 1e-5, 1e-6));
  }
}

TEST_CASE("without mixing the targets are the smoothed labels", "[data]") {
  AugmentSpec augment;
  augment.label_smoothing = 0.2;
  augment.mixup = 1.0;
  augment.mix_prob = 0.0;
  CHECK_FALSE(mixing_enabled(augment));
  const MixedBatch plain = mix_batch(batch_images(), batch_labels(), 5, augment, 3);
  CHECK(plain.lambda == 1.0);
  CHECK(at::equal(plain.images, batch_images()));
  CHECK(plain.targets[2][2].item<float>() == Approx(0.8 + 0.04));
  CHECK(plain.targets[2][0].item<float>() == Approx(0.04));
}
