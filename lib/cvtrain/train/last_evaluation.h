// After training: the last evaluation's figures by class (the weights the run ends with), logged
// and written to RUN/eval.json as `cvtrain eval` writes them, so that the report shows which
// classes fail and what they are taken for without a second pass over data.val.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cvtrain/train/evaluator.h"

namespace cvtrain {

struct RankInfo;
struct Recipe;
struct TrainingRun;

class LastEvaluation {
 public:
  // Each epoch's evaluation of the raw weights; the last one stays.
  void keep(const EvalResult& eval, double seconds);
  // Collective (the unusable validation samples are summed over ranks); rank 0 logs and writes
  // RUN/eval.json, naming the checkpoint that holds the weights. Nothing without a data.val.
  void report(const TrainingRun& run, const Recipe& recipe, const RankInfo& rank, int64_t step, const std::string& checkpoint) const;

 private:
  std::optional<EvalResult> last_;
  double seconds_ = 0;
};

}  // namespace cvtrain
