// The input-bound warning: said once per epoch when the step waited on the input pipeline for a
// large part of its time, with the recipe keys and tools that help.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace cvtrain {

class InputBoundWarning {
 public:
  static constexpr double kThreshold = 0.2;  // TensorFlow's input-pipeline analyzer: >= 20 % is "highly input-bound"

  // The warning for an interval that waited `data_wait` (a fraction of its time) in `epoch`,
  // or nullopt when below the threshold or already said this epoch.
  std::optional<std::string> check(double data_wait, int64_t epoch, int64_t workers, unsigned cores);

 private:
  int64_t warned_epoch_ = -1;
};

}  // namespace cvtrain
