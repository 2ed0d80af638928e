// Step-phase arithmetic (see step_phases.h).
#include "cvtrain/observe/step_phases.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace cvtrain {

double PhaseSeconds::total() const { return std::accumulate(seconds.begin(), seconds.end(), 0.0); }

PhaseSeconds& PhaseSeconds::operator+=(const PhaseSeconds& other) {
  for (size_t i = 0; i < kPhaseCount; ++i) seconds[i] += other.seconds[i];
  return *this;
}

void PhaseTotals::add_step(const PhaseSeconds& step) {
  sum_ += step;
  ++steps_;
}

double PhaseTotals::step_s() const { return steps_ > 0 ? sum_.total() / static_cast<double>(steps_) : 0.0; }

double PhaseTotals::mean_s(Phase p) const { return steps_ > 0 ? sum_[p] / static_cast<double>(steps_) : 0.0; }

double PhaseTotals::fraction(Phase p) const {
  const double total = sum_.total();
  return total > 0 ? sum_[p] / total : 0.0;
}

Phase PhaseTotals::largest() const {
  return static_cast<Phase>(std::max_element(sum_.seconds.begin(), sum_.seconds.end()) - sum_.seconds.begin());
}

std::string PhaseTotals::describe() const {
  std::string line;
  for (size_t i = 0; i < kPhaseCount; ++i)
    line += fmt::format("{}{} {:.0f}%", i == 0 ? "" : " ", kPhaseNames[i], 100 * fraction(static_cast<Phase>(i)));
  return line;
}

}  // namespace cvtrain
