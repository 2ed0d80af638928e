// Policy strings as timm spells them, errors that name the bad part, and draws that are a pure
// function of the sample's key.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "cvtrain/core/rng.h"
#include "cvtrain/data/auto_augment.h"
#include "cvtrain/data/erasing_plan.h"
#include "cvtrain/recipe/recipe.h"

using namespace cvtrain;

namespace {

std::string parse_error(const std::string& text) {
  try {
    parse_augment_policy(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  FAIL("expected '" << text << "' to be refused");
  return {};
}

}  // namespace

TEST_CASE("timm's RandAugment strings parse into its op sets", "[augment]") {
  const AugmentPolicy deit = parse_augment_policy("rand-m9-mstd0.5-inc1");
  CHECK(deit.kind == AugmentPolicy::Kind::kRand);
  REQUIRE(deit.ops.size() == 15);
  CHECK(deit.ops[4].op == AugmentOp::kPosterizeIncreasing);
  CHECK(deit.ops[0].magnitude == 9);
  CHECK(deit.ops[0].prob == 0.5);
  CHECK(deit.magnitude_std == 0.5);
  CHECK(deit.num_layers == 2);
  const AugmentPolicy plain = parse_augment_policy("rand-n3-m7-p0.8-mmax12");
  CHECK(plain.ops[4].op == AugmentOp::kPosterize);
  CHECK(plain.num_layers == 3);
  CHECK(plain.ops[0].prob == 0.8);
  CHECK(plain.magnitude_max == 12);
  CHECK(std::isinf(parse_augment_policy("rand-mstd101").magnitude_std));  // > 100: uniform magnitudes
  const AugmentPolicy weighted = parse_augment_policy("rand-m9-tweights");
  CHECK(weighted.weights.size() == weighted.ops.size());
  CHECK(parse_augment_policy("original").sub_policies.size() == 25);
  CHECK(parse_augment_policy("3a").sub_policies.size() == 3);
  CHECK(parse_augment_policy("").kind == AugmentPolicy::Kind::kNone);
  CHECK(parse_augment_policy("ta_wide").kind == AugmentPolicy::Kind::kTrivial);
}

TEST_CASE("a bad policy string is refused, naming the part that is wrong", "[augment]") {
  CHECK_THAT(parse_error("rand-x9"), Catch::Contains("unknown section 'x9'"));
  CHECK_THAT(parse_error("ta_wide-m9"), Catch::Contains("unknown section 'm9'; ta_wide (TrivialAugmentWide) takes none"));
  CHECK_THAT(parse_error("rand-m"), Catch::Contains("section 'm' has no value"));
  CHECK_THAT(parse_error("rand-m9.5"), Catch::Contains("'m9.5' needs a whole number"));
  CHECK_THAT(parse_error("rand-m9--n2"), Catch::Contains("empty section"));
  CHECK_THAT(parse_error("rand-tbogus"), Catch::Contains("unknown op set 'tbogus'"));
  CHECK_THAT(parse_error("randaugment"), Catch::Contains("'randaugment' is not a policy"));
  CHECK_THAT(parse_error("original-m9"), Catch::Contains("unknown section 'm9'"));
}

TEST_CASE("the ops drawn are a pure function of the key, and follow the policy's counts", "[augment]") {
  const AugmentPolicy always = parse_augment_policy("rand-m9-n3-p1.0");
  std::set<std::string> sequences;
  for (uint64_t key = 0; key < 200; ++key) {
    const auto a = draw_augment_ops(always, key, AugmentInterpolation::kBicubic);
    const auto b = draw_augment_ops(always, key, AugmentInterpolation::kBicubic);
    REQUIRE(a.size() == 3);  // p1.0: every chosen op applies
    std::string text;
    for (size_t i = 0; i < a.size(); ++i) {
      REQUIRE(a[i].op == b[i].op);
      REQUIRE(a[i].argument == b[i].argument);
      if (a[i].op == AugmentOp::kRotate || a[i].op == AugmentOp::kShearX) REQUIRE(a[i].resample == Resample::kBicubic);
      text += std::string(augment_op_name(a[i].op)) + std::to_string(a[i].argument);
    }
    sequences.insert(text);
  }
  CHECK(sequences.size() > 150);
  int applied = 0;
  const AugmentPolicy half = parse_augment_policy("rand-m9");
  for (uint64_t key = 0; key < 2000; ++key) applied += static_cast<int>(draw_augment_ops(half, key, AugmentInterpolation::kRandom).size());
  CHECK(applied == Approx(2000).epsilon(0.08));  // 2 layers at p = 0.5
  const AugmentPolicy three = parse_augment_policy("3a");
  for (uint64_t key = 0; key < 50; ++key) REQUIRE(draw_augment_ops(three, key, AugmentInterpolation::kRandom).size() == 1);
}

TEST_CASE("magnitudes: m10 rotates by 30 degrees either way, noise stays within [0, mmax]", "[augment]") {
  const AugmentPolicy rotate_max = parse_augment_policy("rand-m10-n1-p1.0");
  for (uint64_t key = 0; key < 500; ++key)
    for (const DrawnOp& op : draw_augment_ops(rotate_max, key, AugmentInterpolation::kRandom))
      if (op.op == AugmentOp::kRotate) REQUIRE(std::abs(op.argument) == Approx(30));
  const AugmentPolicy noisy = parse_augment_policy("rand-m9-n1-p1.0-mstd5-inc1");
  for (uint64_t key = 0; key < 500; ++key)
    for (const DrawnOp& op : draw_augment_ops(noisy, key, AugmentInterpolation::kRandom)) {
      if (op.op == AugmentOp::kShearX) REQUIRE(std::abs(op.argument) <= 0.3 + 1e-12);
      if (op.op == AugmentOp::kSolarizeIncreasing) REQUIRE((op.argument >= 0 && op.argument <= 256));
    }
}

TEST_CASE("random erasing boxes fit the image, come with the probability, and are keyed", "[augment]") {
  RandomErasingSpec spec;
  spec.prob = 0.25;
  spec.count = 3;
  int erased = 0;
  for (uint64_t key = 0; key < 4000; ++key) {
    const auto boxes = plan_erasing(spec, 32, 48, key);
    const auto again = plan_erasing(spec, 32, 48, key);
    REQUIRE(boxes.size() == again.size());
    REQUIRE(boxes.size() <= 3);
    erased += boxes.empty() ? 0 : 1;
    for (const EraseBox& b : boxes) {
      REQUIRE((b.height > 0 && b.width > 0 && b.top >= 0 && b.left >= 0));
      REQUIRE((b.top + b.height <= 32 && b.left + b.width <= 48));
      REQUIRE(b.height * b.width <= 32 * 48 / 3.0 * 1.3);
    }
  }
  CHECK(erased == Approx(1000).epsilon(0.1));
  spec.prob = 0;
  CHECK(plan_erasing(spec, 32, 48, 1).empty());
}

TEST_CASE("colour jitter draws brightness, contrast and saturation once each, in a keyed random order", "[augment]") {
  std::set<std::string> orders;
  for (uint64_t key = 0; key < 300; ++key) {
    const std::vector<DrawnOp> drawn = draw_color_jitter(0.4, key);
    REQUIRE(drawn.size() == 3);
    std::string order;
    for (const DrawnOp& op : drawn) {
      REQUIRE((op.argument >= 0.6 && op.argument <= 1.4));
      order += augment_op_name(op.op);
    }
    orders.insert(order);
    REQUIRE(draw_color_jitter(0.4, key)[0].argument == drawn[0].argument);
  }
  CHECK(orders.size() == 6);  // every permutation of the three
  CHECK(jitters_with(parse_augment_policy("")));
  CHECK(jitters_with(parse_augment_policy("3a")));
  CHECK_FALSE(jitters_with(parse_augment_policy("rand-m9")));  // timm turns jitter off under RandAugment
}

TEST_CASE("ta_wide draws one op per image, each of torchvision's 14 about equally often", "[augment]") {
  const AugmentPolicy trivial = parse_augment_policy("ta_wide");
  std::map<AugmentOp, int> counts;
  for (uint64_t key = 0; key < 14000; ++key) {
    const std::vector<DrawnOp> ops = draw_augment_ops(trivial, key, AugmentInterpolation::kRandom);
    REQUIRE(ops.size() == 1);
    CHECK(ops[0].resample == Resample::kNearest);  // torchvision's default interpolation
    ++counts[ops[0].op];
  }
  CHECK(counts.size() == 14);
  for (const auto& [op, count] : counts) CHECK(count == Approx(1000).epsilon(0.12));
  CHECK(draw_augment_ops(trivial, 7, AugmentInterpolation::kBicubic)[0].resample == Resample::kBicubic);
}
