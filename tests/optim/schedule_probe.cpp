// A test program for tests/parity/check_schedules.py: prints cvtrain's learning rate of every step
// of one schedule, to be set against timm's schedulers.
//   schedule_probe NAME BASE_LR STEPS_PER_EPOCH TOTAL_STEPS WARMUP_EPOCHS WARMUP_LR MIN_LR PREFIX ON_EPOCHS [COOLDOWN_EPOCHS]
//   NAME: cosine | constant; PREFIX, ON_EPOCHS: 0 | 1; one learning rate per line, %.17g
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cvtrain/optim/lr_schedule.h"

int main(int argc, char** argv) {
  if (argc != 10 && argc != 11) {
    std::fprintf(stderr,
                 "usage: schedule_probe NAME BASE_LR STEPS_PER_EPOCH TOTAL_STEPS WARMUP_EPOCHS WARMUP_LR MIN_LR PREFIX ON_EPOCHS "
                 "[COOLDOWN_EPOCHS]\n");
    return 2;
  }
  cvtrain::ScheduleSpec spec;
  spec.name = std::string(argv[1]) == "constant" ? cvtrain::ScheduleKind::kConstant : cvtrain::ScheduleKind::kCosine;
  const double base_lr = std::atof(argv[2]);
  const long steps_per_epoch = std::atol(argv[3]), total = std::atol(argv[4]);
  spec.warmup_epochs = std::atof(argv[5]);
  spec.warmup_lr = std::atof(argv[6]);
  spec.min_lr = std::atof(argv[7]);
  spec.warmup_prefix = std::atoi(argv[8]) != 0;
  spec.step_on_epochs = std::atoi(argv[9]) != 0;
  if (argc == 11) spec.cooldown_epochs = std::atof(argv[10]);
  const cvtrain::LrSchedule schedule(spec, base_lr, steps_per_epoch, total);
  for (long step = 0; step < total; ++step) std::printf("%.17g\n", schedule.at(step));
  return 0;
}
