// When a checkpoint is due, and which epoch is the best: pure decisions on recipe values, apart from
// the files and the collectives (train/checkpoint_manager.h), so they are unit-tested alone.
#pragma once

#include <cstdint>
#include <optional>

namespace cvtrain {

struct CheckpointSpec;
enum class BestMetric;

class CheckpointCadence {
 public:
  explicit CheckpointCadence(const CheckpointSpec& spec);
  // checkpoint.every_minutes has elapsed since the last save (rank 0's clock; the ranks agree on it
  // in the step's control all-reduce).
  bool minutes_elapsed(double seconds_since_save) const;
  // After optimizer step `step` (1-based count of steps done): every_steps, the agreed minutes, or
  // a stop request, which always saves first.
  bool due(int64_t step, bool minutes_elapsed_agreed, bool stop) const;

 private:
  int64_t every_steps_;
  double every_minutes_;
};

// train.eval_every: whether the epoch that just ended (0-based) is evaluated: every N-th, and the
// run's last (`last`), so that a run always ends with its figures.
bool evaluation_due(int64_t eval_every, int64_t epoch, bool last);

// checkpoint.keep_best: which evaluated epoch is the best so far. The higher main score (the task's:
// top-1 or mIoU; of the weights, or of train.ema's average) wins; a tie keeps the earlier epoch.
class BestEpoch {
 public:
  explicit BestEpoch(BestMetric metric) : metric_(metric) {}
  // The epoch's score by the metric; nullopt when not judged (keep_best none, no ema figures).
  std::optional<double> score(double main, std::optional<double> main_ema) const;
  bool improves(double score) const { return !best_ || score > *best_; }
  void take(double score) { best_ = score; }
  std::optional<double> best() const { return best_; }

 private:
  BestMetric metric_;
  std::optional<double> best_;
};

}  // namespace cvtrain
