// The rank side of the progress pipe (the supervisor side is in supervisor.cpp).
#include "cvtrain/launch/heartbeat.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
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

constexpr int64_t kStarted = 8, kPhaseBlock = 16;
static_assert(kStarted > static_cast<int64_t>(kCollectiveCount) && kPhaseBlock >= static_cast<int64_t>(kCollectiveCount));
static_assert(kPhaseBlock * (1 + static_cast<int64_t>(kPhaseCount)) <= kProgressPerStep);

namespace {

// The last report outside a collective: where report_collective adds the collective.
std::atomic<int64_t> last_position{-1};

void report_position(int64_t value) {
  last_position.store(value, std::memory_order_relaxed);
  report(value);
}

}  // namespace

void report_step_started(int64_t step) { report_position(kProgressPerStep * (step - 1) + kStarted); }
void report_step_done(int64_t step) { report_position(kProgressPerStep * step); }
void report_phase(int64_t step, Phase phase) {
  report_position(kProgressPerStep * (step - 1) + kPhaseBlock * (1 + static_cast<int64_t>(phase)));
}

void report_collective(Collective collective) {
  const int64_t position = last_position.load(std::memory_order_relaxed);
  if (position >= 0) report(position + static_cast<int64_t>(collective));
}

std::string describe_progress(int64_t value) {
  const int64_t within = value % kProgressPerStep, done = value / kProgressPerStep;
  const int64_t slot = within < kStarted ? 0 : within < kPhaseBlock ? kStarted : within / kPhaseBlock * kPhaseBlock;
  const auto collective = static_cast<size_t>(within - slot);
  std::string text = slot == 0 ? "after step " + std::to_string(done) : "inside step " + std::to_string(done + 1);
  if (slot >= kPhaseBlock) text += std::string(", in ") + kPhaseNames[static_cast<size_t>(slot / kPhaseBlock - 1)];
  if (collective > 0 && collective < kCollectiveCount) text += std::string(", waiting in ") + kCollectiveNames[collective];
  return text;
}

}  // namespace cvtrain
