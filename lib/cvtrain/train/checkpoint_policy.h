// When a checkpoint is due: a pure decision on recipe values, apart from the files and the
// collectives (train/checkpoint_manager.h), so it is unit-tested alone.
#pragma once

#include <cstdint>

namespace cvtrain {

struct CheckpointSpec;

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

}  // namespace cvtrain
