// Checkpoints of a run as collectives: when one is due (train/checkpoint_policy.h), saving (every
// rank contributes its shards, rank 0 writes, every rank learns whether it worked, so a failed
// write stops them together), resuming (rank 0 chooses, so every rank loads the same one), and
// checkpoint.keep_best's checkpoint of the best evaluated epoch in OUTPUT/best.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cvtrain/core/timer.h"
#include "cvtrain/recipe/recipe_changes.h"
#include "cvtrain/train/checkpoint.h"
#include "cvtrain/train/checkpoint_policy.h"

namespace torch::optim {
class Optimizer;
}

namespace cvtrain {

class Communicator;
class LossScaler;
class Strategy;
struct EpochRecord;
struct Recipe;
struct ResumeChoice;
class LrSchedule;

struct ResumedRun {
  std::string folder;
  TrainPosition position;
  NamedTensors ema;  // train.ema's average, if the checkpoint holds one
};

class CheckpointManager {
 public:
  // `schedule`: the run's; a checkpoint keeps the next step's learning rate, and a resume under
  // another schedule says how the rate jumps (optim/lr_schedule.h, lr_jump). `class_names`: the
  // training classes' where the data names them, kept in every checkpoint (kClassNamesFile).
  CheckpointManager(const Recipe& recipe, Communicator& comm, c10::Device device, const LrSchedule& schedule,
                    std::vector<std::string> class_names = {});

  // Rank 0's clock against checkpoint.every_minutes (the step's control all-reduce agrees on it).
  bool minutes_elapsed() const { return cadence_.minutes_elapsed(since_save_.seconds()); }
  bool due(int64_t step, bool minutes_elapsed_agreed, bool stop) const { return cadence_.due(step, minutes_elapsed_agreed, stop); }

  // Collective. Saves `position` unless it is saved already (the end of training on an every_steps
  // step; the same step at the next epoch, once evaluated, is saved again). Throws Error on every
  // rank when rank 0 could not write.
  // `ema`: the weight average's state (train.ema; identical on every rank), or empty.
  void save(TrainPosition position, Strategy& strategy, torch::optim::Optimizer& optimizer, const LossScaler& scaler, const Recipe& recipe,
            const NamedTensors& ema = {});

  // Collective. Loads the checkpoint that checkpoint.resume names into the strategy's model and
  // optimizer (and the RNG states); nullopt for a fresh start.
  std::optional<ResumedRun> resume(const ResumeChoice& resume, Strategy& strategy, torch::optim::Optimizer& optimizer);

  // checkpoint.keep_best: whether an epoch's evaluation (the same figures on every rank) beats the
  // best so far, of this run (a resumed run's best is read back from OUTPUT/best/best.json).
  bool beats_best(const EpochRecord& record) const;
  // Collective, after beats_best: the checkpoint of `position` in OUTPUT/best, replacing the one
  // before, and OUTPUT/best/best.json with the epoch's figures.
  void save_best(const TrainPosition& position, const EpochRecord& record, Strategy& strategy, torch::optim::Optimizer& optimizer,
                 const LossScaler& scaler, const Recipe& recipe, const NamedTensors& ema = {});

  std::string folder_of(int64_t step) const { return files_.folder_of(step); }
  std::string last_complete() const;  // empty when none was saved yet

 private:
  TrainPosition position_in_this_run(const TrainPosition& saved, const std::string& folder) const;
  // The keys changed since `folder` was saved (none when its recipe.yaml is missing or unreadable),
  // said once on rank 0.
  std::vector<KeyChange> recipe_changes_since(const std::string& folder) const;
  std::string device_label() const;
  std::string write(const Checkpointer& files, TrainPosition position, Strategy& strategy, torch::optim::Optimizer& optimizer,
                    const LossScaler& scaler, const Recipe& recipe, const NamedTensors& ema);
  std::optional<double> score_of(const EpochRecord& record) const;
  void restore_best(int64_t resumed_step);
  void write_best_summary(const std::string& folder, const EpochRecord& record, double score) const;

  Checkpointer files_;
  Checkpointer best_files_;  // OUTPUT/best
  BestEpoch best_;
  std::string best_metric_;
  CheckpointCadence cadence_;
  Communicator& comm_;
  c10::Device device_;
  const LrSchedule& schedule_;
  Stopwatch since_save_;
  int64_t last_saved_step_ = -1, last_saved_epoch_ = -1;
  int64_t global_batch_;
  std::string optimizer_name_;
  std::string resolved_recipe_;  // this run's, to compare with a resumed checkpoint's
  std::vector<std::string> class_names_;
};

}  // namespace cvtrain
