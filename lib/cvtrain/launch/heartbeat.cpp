// The rank side of the progress pipe (the supervisor side is in supervisor.cpp).
#include "cvtrain/launch/heartbeat.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace cvtrain {
namespace {

int progress_fd() {
  static const int fd = [] {
    const char* value = std::getenv("CVTRAIN_PROGRESS_FD");
    if (!value) return -1;
    const int parsed = std::atoi(value);
    if (parsed <= 2 || fcntl(parsed, F_GETFD) < 0) return -1;
    fcntl(parsed, F_SETFD, FD_CLOEXEC);  // not inherited by anything this rank starts
    fcntl(parsed, F_SETFL, fcntl(parsed, F_GETFL) | O_NONBLOCK);
    return parsed;
  }();
  return fd;
}

void report(int64_t value) {
  const int fd = progress_fd();
  if (fd < 0) return;
  // 8 bytes is below PIPE_BUF, so the write is atomic; a full pipe (supervisor busy) drops it.
  [[maybe_unused]] const ssize_t n = write(fd, &value, sizeof value);
}

}  // namespace

constexpr int64_t kPerStep = 16;  // room for "started" and every phase
static_assert(kPhaseCount + 2 <= kPerStep);

void report_step_started(int64_t step) { report(kPerStep * (step - 1) + 1); }
void report_step_done(int64_t step) { report(kPerStep * step); }
void report_phase(int64_t step, Phase phase) { report(kPerStep * (step - 1) + 2 + static_cast<int64_t>(phase)); }

std::string describe_progress(int64_t value) {
  const int64_t within = value % kPerStep, step = value / kPerStep + (within > 0 ? 1 : 0);
  if (within == 0) return "after step " + std::to_string(step);
  const std::string inside = "inside step " + std::to_string(step);
  if (within == 1 || within - 2 >= static_cast<int64_t>(kPhaseCount)) return inside;
  return inside + ", in " + kPhaseNames[static_cast<size_t>(within - 2)];
}

}  // namespace cvtrain
