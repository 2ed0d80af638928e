// Progress formatting; writes go to stderr like the log so the two interleave correctly.
#include "cvtrain/observe/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "cvtrain/core/log.h"

namespace cvtrain {

std::string format_duration(double seconds) {
  const auto s = static_cast<int64_t>(std::max(0.0, std::round(seconds)));
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  return fmt::format("{}m{:02}s", s / 60, s % 60);
}

std::string format_progress(const ProgressState& p) {
  return fmt::format("epoch {}/{} step {}/{} loss {:.4f} lr {:.3g} {:.0f} img/s data-wait {:.0f}% ETA {}", p.epoch, p.epochs,
                     p.step, p.total_steps, p.loss, p.lr, p.images_per_s, 100 * p.data_wait, format_duration(p.eta_s));
}

ProgressDisplay::ProgressDisplay(bool interactive) : interactive_(interactive) {}

bool ProgressDisplay::stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

bool ProgressDisplay::redraw_due() {
  if (!interactive_ || redraw_clock_.seconds() < 0.2) return false;
  redraw_clock_.reset();
  return true;
}

void ProgressDisplay::update(const ProgressState& state, bool log_line) {
  if (interactive_) {
    std::fprintf(stderr, "\r\033[K%s", format_progress(state).c_str());
    std::fflush(stderr);
    line_open_ = true;
  } else if (log_line) {
    log::info("{}", format_progress(state));
  }
}

void ProgressDisplay::finish_line() {
  if (line_open_) std::fputc('\n', stderr);
  line_open_ = false;
}

}  // namespace cvtrain
