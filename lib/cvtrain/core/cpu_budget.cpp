// usable_cpus(): sched_getaffinity's count; process_cpu_seconds(): CLOCK_PROCESS_CPUTIME_ID; automatic_workers (see cpu_budget.h).
#include "cvtrain/core/cpu_budget.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <thread>

namespace cvtrain {

unsigned usable_cpus() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0) {
    const int count = CPU_COUNT(&mask);
    if (count > 0) return static_cast<unsigned>(count);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

int64_t automatic_workers(unsigned cores_per_rank, bool on_gpu, int64_t most) {
  const int64_t cores = cores_per_rank;
  return std::clamp<int64_t>(on_gpu ? cores - 1 : cores / 2, 1, std::max<int64_t>(1, most));
}

}  // namespace cvtrain
