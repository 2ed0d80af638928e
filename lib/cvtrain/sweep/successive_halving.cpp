// rung_epochs and promotable.
#include "cvtrain/sweep/successive_halving.h"

#include <algorithm>
#include <cmath>

namespace cvtrain {

std::vector<int64_t> rung_epochs(int64_t grace, int64_t reduction, int64_t max_epochs) {
  std::vector<int64_t> rungs;
  if (grace > 0)
    for (int64_t e = grace; e < max_epochs; e *= reduction) rungs.push_back(e);
  rungs.push_back(max_epochs);
  return rungs;
}

bool promotable(const std::vector<double>& results, double mine, int64_t reduction, bool maximize) {
  if (std::isnan(mine)) return false;
  std::vector<double> ranked;
  for (double r : results)
    if (!std::isnan(r)) ranked.push_back(r);
  const size_t quota = results.size() / static_cast<size_t>(reduction);
  if (quota == 0) return false;
  std::sort(ranked.begin(), ranked.end(), [&](double a, double b) { return maximize ? a > b : a < b; });
  if (ranked.size() < quota) return true;
  const double threshold = ranked[quota - 1];
  return maximize ? mine >= threshold : mine <= threshold;
}

}  // namespace cvtrain
