// LR schedule values at the points that matter: warmup, peak, middle, end, milestones.
#include <catch2/catch.hpp>

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
