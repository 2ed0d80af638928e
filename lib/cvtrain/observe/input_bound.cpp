// The input-bound warning's rule and wording (see input_bound.h).
#include "cvtrain/observe/input_bound.h"

#include <fmt/format.h>

namespace cvtrain {

std::optional<std::string> InputBoundWarning::check(double data_wait, int64_t epoch, int64_t workers, unsigned cores) {
  if (data_wait < kThreshold || warned_epoch_ == epoch) return std::nullopt;
  warned_epoch_ = epoch;
  return fmt::format(
      "input-bound: {:.0f}% of step time waiting for data. Raise data.workers (now {}; this node has {} cores), "
      "pack the data to shards pre-resized near model.image_size (`cvtrain data pack --resize`), or measure the "
      "pipeline alone with `cvtrain data bench`.",
      100 * data_wait, workers, cores);
}

}  // namespace cvtrain
