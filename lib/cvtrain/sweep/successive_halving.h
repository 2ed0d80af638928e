// Asynchronous successive halving (ASHA, Li et al. 2020, as Ray Tune's scheduler): the epochs at
// which a trial pauses to be compared, and the rule that lets it go on. Apart from processes, so
// the rule is unit-tested on numbers.
#pragma once

#include <cstdint>
#include <vector>

namespace cvtrain {

// grace, grace*reduction, grace*reduction^2, ... below max_epochs, then max_epochs itself;
// grace 0 (no early stopping): max_epochs alone.
std::vector<int64_t> rung_epochs(int64_t grace, int64_t reduction, int64_t max_epochs);

// Whether a trial whose metric at a rung is `mine` is among the best floor(n / reduction) of the
// n `results` recorded at that rung (its own included). NaN (nothing reported) is never among them.
bool promotable(const std::vector<double>& results, double mine, int64_t reduction, bool maximize);

}  // namespace cvtrain
