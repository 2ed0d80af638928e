// The live progress line: rewritten in place on a terminal, plain log lines otherwise.
#pragma once

#include <cstdint>
#include <string>

#include "cvtrain/core/timer.h"

namespace cvtrain {

struct ProgressState {
  int64_t step = 0;
  int64_t total_steps = 0;
  int64_t epoch = 0;
  int64_t epochs = 0;
  double loss = 0;
  double lr = 0;
  double images_per_s = 0;
  double data_wait = 0;  // fraction of step time spent waiting for data
  double eta_s = 0;
};

std::string format_duration(double seconds);
std::string format_progress(const ProgressState& state);

class ProgressDisplay {
 public:
  explicit ProgressDisplay(bool interactive);
  static bool stderr_is_terminal();
  bool interactive() const { return interactive_; }
  // On a terminal, at most five redraws a second: whether one is due now (and, if so, its clock restarts).
  bool redraw_due();
  // On a terminal: redraw the line; otherwise print only when `log_line` is true.
  void update(const ProgressState& state, bool log_line);
  // Ends a live line so the next message starts on its own line.
  void finish_line();

 private:
  bool interactive_;
  bool line_open_ = false;
  Stopwatch redraw_clock_;
};

}  // namespace cvtrain
