// LR schedule values at the points that matter: warmup, peak, middle, end, milestones.
#include <catch2/catch.hpp>

#include <cmath>

#include "cvtrain/optim/lr_schedule.h"

using namespace cvtrain;

TEST_CASE("linear warmup then cosine to min_lr", "[optim]") {
  ScheduleSpec spec;
  spec.name = ScheduleKind::kCosine;
  spec.warmup_epochs = 1;
  spec.min_lr = 0.01;
  const LrSchedule s(spec, 1.0, 10, 110);  // 10 warmup steps, 100 cosine steps
  CHECK(s.warmup_steps() == 10);
  CHECK(s.at(0) == Approx(0.1));
  CHECK(s.at(4) == Approx(0.5));
  CHECK(s.at(9) == Approx(1.0));
  CHECK(s.at(10) == Approx(1.0));
  CHECK(s.at(60) == Approx(0.01 + 0.99 * 0.5));
  CHECK(s.at(110) == Approx(0.01));
  CHECK(s.at(500) == Approx(0.01));  // past the end it stays at the floor
}

TEST_CASE("step schedule multiplies by gamma at each milestone epoch", "[optim]") {
  ScheduleSpec spec;
  spec.name = ScheduleKind::kStep;
  spec.milestones = {2, 4.5};
  spec.gamma = 0.1;
  const LrSchedule s(spec, 0.4, 100, 1000);
  CHECK(s.at(199) == Approx(0.4));
  CHECK(s.at(200) == Approx(0.04));
  CHECK(s.at(449) == Approx(0.04));
  CHECK(s.at(450) == Approx(0.004));
}

TEST_CASE("constant schedule ignores everything but warmup", "[optim]") {
  ScheduleSpec spec;
  spec.name = ScheduleKind::kConstant;
  spec.warmup_epochs = 0.5;
  const LrSchedule s(spec, 0.2, 10, 100);
  CHECK(s.at(0) == Approx(0.04));
  CHECK(s.at(50) == Approx(0.2));
}

TEST_CASE("warmup_lr starts the warmup there, as timm's scheduler does", "[optim]") {
  ScheduleSpec spec;
  spec.name = ScheduleKind::kConstant;
  spec.warmup_epochs = 1;
  spec.warmup_lr = 0.1;
  const LrSchedule s(spec, 1.1, 10, 100);
  CHECK(s.at(0) == Approx(0.1));    // t = 0 is warmup_lr itself
  CHECK(s.at(5) == Approx(0.6));    // 0.1 + 5 * (1.1 - 0.1) / 10
  CHECK(s.at(10) == Approx(1.1));
}

TEST_CASE("without the warmup prefix the cosine counts from step 0, warmup included", "[optim]") {
  ScheduleSpec spec;
  spec.name = ScheduleKind::kCosine;
  spec.warmup_epochs = 1;
  spec.warmup_lr = 0;
  const LrSchedule prefixed(spec, 1.0, 10, 110);
  spec.warmup_prefix = false;
  const LrSchedule whole(spec, 1.0, 10, 110);
  CHECK(prefixed.at(10) == Approx(1.0));
  CHECK(whole.at(10) == Approx(0.5 * (1 + std::cos(M_PI * 10 / 110))));  // already decayed a little
  CHECK(whole.at(55) == Approx(0.5));
  CHECK(prefixed.at(60) == Approx(0.5));
}

TEST_CASE("step_on_epochs holds the learning rate for a whole epoch", "[optim]") {
  ScheduleSpec spec;
  spec.name = ScheduleKind::kCosine;
  spec.warmup_epochs = 2;
  spec.warmup_lr = 0.01;
  spec.step_on_epochs = true;
  const LrSchedule s(spec, 1.0, 10, 100);  // 10 epochs of 10 steps
  CHECK(s.at(0) == Approx(0.01));
  CHECK(s.at(9) == Approx(0.01));
  CHECK(s.at(10) == Approx(0.505));  // epoch 1 of 2 warmup epochs
  CHECK(s.at(19) == Approx(0.505));
  CHECK(s.at(20) == Approx(1.0));    // the cosine of epoch 0 of the 8 after the warmup
  CHECK(s.at(99) == Approx(0.5 * (1 + std::cos(M_PI * 7 / 8))));
}

TEST_CASE("cooldown_epochs ends the cosine that many epochs early and holds min_lr to the run's end", "[optim]") {
  ScheduleSpec spec;
  spec.name = ScheduleKind::kCosine;
  spec.min_lr = 0.01;
  spec.cooldown_epochs = 2;
  const LrSchedule per_step(spec, 1.0, 10, 100);  // 10 epochs: the cosine over the first 80 steps
  CHECK(per_step.at(40) == Approx(0.01 + 0.99 * 0.5));
  CHECK(per_step.at(79) > 0.01);
  CHECK(per_step.at(80) == Approx(0.01));
  CHECK(per_step.at(99) == Approx(0.01));
  spec.step_on_epochs = true;
  spec.warmup_epochs = 2;
  const LrSchedule per_epoch(spec, 1.0, 10, 100);  // 2 warmup, 6 cosine, 2 cool-down epochs
  CHECK(per_epoch.at(20) == Approx(1.0));
  CHECK(per_epoch.at(50) == Approx(0.01 + 0.99 * 0.5));  // epoch 5: half of the 6
  CHECK(per_epoch.at(79) > 0.01);
  CHECK(per_epoch.at(80) == Approx(0.01));
}

TEST_CASE("a resume under a stretched schedule says how the learning rate jumps, and an unchanged one says nothing", "[optim]") {
  ScheduleSpec spec;
  spec.name = ScheduleKind::kCosine;
  spec.warmup_epochs = 0;
  const LrSchedule finished(spec, 0.1, 10, 100), stretched(spec, 0.1, 10, 200);
  REQUIRE(finished.at(100) == Approx(0.0).margin(1e-12));  // the saved run's cosine ended at 0
  const auto jump = lr_jump(finished.at(100), stretched.at(100), 100, "runs/a/checkpoints/step-00000100");
  REQUIRE(jump.has_value());
  CHECK(jump->climbs);
  CHECK_THAT(jump->message, Catch::StartsWith("the learning rate goes on at 0.05 from step 101, where the saved run's schedule had 0"));
  CHECK_THAT(jump->message, Catch::Contains("model.pretrained=runs/a/checkpoints/step-00000100/model.safetensors"));

  const auto shorter = lr_jump(stretched.at(50), finished.at(50), 50, "c");  // a shorter run: the rate falls, said without advice
  REQUIRE(shorter.has_value());
  CHECK_FALSE(shorter->climbs);
  CHECK_THAT(shorter->message, !Catch::Contains("model.pretrained"));

  CHECK_FALSE(lr_jump(finished.at(40), finished.at(40), 40, "c").has_value());  // the same schedule
  CHECK_FALSE(lr_jump(0.0500, 0.0504, 40, "c").has_value());                    // within 1 %
  CHECK_FALSE(lr_jump(-1, 0.05, 40, "c").has_value());                          // a checkpoint that did not say
}

TEST_CASE("poly decays as mmseg's PolyLR, (base - min) (1 - t / T)^power + min, after the warmup", "[optim]") {
  ScheduleSpec spec;
  spec.name = ScheduleKind::kPoly;
  spec.power = 0.9;
  spec.min_lr = 1e-4;
  spec.warmup_epochs = 1;
  const LrSchedule s(spec, 0.01, 10, 110);  // 10 warmup steps, then 100 of poly
  CHECK(s.at(10) == Approx(0.01));
  CHECK(s.at(60) == Approx(1e-4 + (0.01 - 1e-4) * std::pow(0.5, 0.9)));
  CHECK(s.at(85) == Approx(1e-4 + (0.01 - 1e-4) * std::pow(0.25, 0.9)));
  CHECK(s.at(110) == Approx(1e-4));
  CHECK(s.at(200) == Approx(1e-4));
  spec.power = 1;
  spec.min_lr = 0;
  spec.warmup_epochs = 0;
  const LrSchedule linear(spec, 1.0, 10, 100);
  CHECK(linear.at(25) == Approx(0.75));
}
