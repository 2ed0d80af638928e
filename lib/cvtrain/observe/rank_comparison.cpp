// Cross-rank statistics and the straggler rule (see rank_comparison.h).
#include "cvtrain/observe/rank_comparison.h"

#include <fmt/format.h>

#include <algorithm>

namespace cvtrain {
namespace {

PhaseSpread spread_of(std::vector<double> values) {
  if (values.empty()) return {};
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  const double median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  return PhaseSpread{values.front(), median, values.back()};
}

}  // namespace

double own_seconds(const RankWindow& w) {
  return w[Phase::kData] + w[Phase::kCopy] + w[Phase::kForward] + w[Phase::kBackward] + w[Phase::kOptimizer];
}

RankComparison compare_ranks(const std::vector<RankWindow>& ranks) {
  RankComparison out;
  if (ranks.empty()) return out;
  std::vector<double> own;
  for (const RankWindow& w : ranks) own.push_back(own_seconds(w));
  for (size_t p = 0; p < kPhaseCount; ++p) {
    std::vector<double> values;
    for (const RankWindow& w : ranks) values.push_back(w.seconds[p]);
    out.phases[p] = spread_of(values);
  }
  out.own = spread_of(own);
  out.slowest = static_cast<int>(std::max_element(own.begin(), own.end()) - own.begin());
  for (double o : own) out.scores.push_back(o > 0 ? out.own.min / o : 1.0);
  double most_above = -1;
  for (Phase p : {Phase::kData, Phase::kCopy, Phase::kForward, Phase::kBackward, Phase::kOptimizer}) {
    const double above = ranks[out.slowest][p] - out.phases[static_cast<size_t>(p)].median;
    if (above > most_above) {
      most_above = above;
      out.slow_phase = p;
    }
  }
  return out;
}

StragglerWatch::StragglerWatch(double threshold, int64_t chronic_windows) : threshold_(threshold), chronic_windows_(chronic_windows) {}

std::optional<StragglerFinding> StragglerWatch::observe(const RankComparison& window) {
  ++windows_;
  if (window.scores.size() < 2 || window.scores[window.slowest] >= threshold_) {
    current_.reset();
    return std::nullopt;
  }
  const int64_t in_row = current_ && current_->rank == window.slowest ? current_->windows_in_row + 1 : 1;
  current_ = StragglerFinding{window.slowest, window.scores[window.slowest], window.slow_phase, in_row, in_row >= chronic_windows_};
  if (!worst_ || in_row > worst_->windows_in_row || (in_row == worst_->windows_in_row && current_->score < worst_->score))
    worst_ = current_;
  return current_;
}

std::string rank_label(int rank, const std::string& host, int local_gpu) {
  if (local_gpu < 0) return fmt::format("rank {} (host {})", rank, host);
  return fmt::format("rank {} (host {}, GPU {})", rank, host, local_gpu);
}

}  // namespace cvtrain
