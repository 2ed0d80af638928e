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
