// Saving and resuming across ranks (see checkpoint_manager.h).
#include "cvtrain/train/checkpoint_manager.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/dist/communicator.h"
#include "cvtrain/parallel/strategy.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/train/loss_scaler.h"

namespace cvtrain {

CheckpointManager::CheckpointManager(const Recipe& recipe, Communicator& comm, c10::Device device)
    : files_(recipe.output, recipe.checkpoint.keep),
      cadence_(recipe.checkpoint),
      comm_(comm),
      device_(device),
      global_batch_(recipe.train.global_batch),
      optimizer_name_(name_of(recipe.optim.name)) {}

void CheckpointManager::save(TrainPosition position, Strategy& strategy, torch::optim::Optimizer& optimizer, const LossScaler& scaler,
                             const Recipe& recipe, const NamedTensors& ema) {
  if (position.step == last_saved_step_) return;
  std::string failure;
  strategy.gather_parameters();
  const NamedTensors model_state = strategy.model_state();
  strategy.release_parameters();
  const NamedTensors optimizer_state = strategy.optimizer_state(optimizer);
  if (comm_.rank() == 0) {
    try {
      const LossScalerState scale = scaler.state();
      position.loss_scale = scaler.enabled() ? scale.scale : 0;
      position.scale_growth_tracker = scale.growth_tracker;
      log::info("checkpoint: {}", files_.save(position, model_state, optimizer_state, recipe, ema));
    } catch (const Error& e) {
      failure = e.what();
    }
  }
  at::Tensor failed = at::full({1}, failure.empty() ? 0.0f : 1.0f, at::TensorOptions(device_).dtype(at::kFloat));
  if (comm_.world_size() > 1) comm_.all_reduce_sum(failed, "checkpoint status all-reduce");
  if (failed.item<float>() > 0) throw Error(failure.empty() ? "rank 0 could not write a checkpoint (see its log)" : failure);
  last_saved_step_ = position.step;
  since_save_.reset();
}

std::optional<ResumedRun> CheckpointManager::resume(const ResumeChoice& resume, Strategy& strategy, torch::optim::Optimizer& optimizer) {
  std::string folder = resume.folder;
  switch (resume.mode) {
    case ResumeMode::kNone:
      return std::nullopt;
    case ResumeMode::kAuto: {
      at::Tensor chosen = at::full({1}, -1.0, at::TensorOptions(device_).dtype(at::kDouble));
      if (comm_.rank() == 0)
        if (const auto latest = files_.latest()) chosen.fill_(static_cast<double>(read_position(*latest).step));
      if (comm_.world_size() > 1) comm_.broadcast(chosen, 0, "broadcast of the checkpoint to resume from");
      const auto step = static_cast<int64_t>(chosen.item<double>());
      if (step < 0) return std::nullopt;
      folder = files_.folder_of(step);
      break;
    }
    case ResumeMode::kFolder:  // a checkpoint folder, or a run folder's newest complete one (as export and eval take)
      folder = checkpoint_folder_of(resume.folder);
      break;
  }
  const CheckpointContents saved = load_checkpoint(folder);
  strategy.load_model_state(saved.model, saved.model_file);
  try {
    strategy.load_optimizer_state(optimizer, saved.optimizer);
  } catch (const Error& e) {
    throw Error(fmt::format("{}/optimizer.safetensors does not fit this run's optimizer (optim.name {}): {}. Resume with the optimizer "
                            "it was saved with, or keep only its weights: checkpoint.resume=none model.pretrained={}/model.safetensors",
                            folder, optimizer_name_, e.what(), folder));
  }
  last_saved_step_ = saved.position.step;
  return ResumedRun{folder, position_in_this_run(saved.position, folder), saved.ema};
}

// A checkpoint of another global batch: its epoch continues after the samples it had done (not
// after as many batches of the new size, which would see some twice or skip some), said once.
TrainPosition CheckpointManager::position_in_this_run(const TrainPosition& saved, const std::string& folder) const {
  if (saved.global_batch <= 0 || saved.global_batch == global_batch_) return saved;
  const TrainPosition moved = saved.in_batches_of(global_batch_);
  if (comm_.rank() == 0)
    log::warn(
        "{} was saved with train.global_batch {}, and this run has {}: epoch {} continues after the same {} samples ({} batches of "
        "the new size), and the step count and schedule from step {}. To continue the run as it was, keep train.global_batch {} "
        "(change micro_batch or accumulation instead).",
        folder, saved.global_batch, global_batch_, saved.epoch + 1, saved.batches_done * saved.global_batch, moved.batches_done, saved.step,
        saved.global_batch);
  return moved;
}

std::string CheckpointManager::last_complete() const {
  const std::vector<std::string> saved = files_.complete_checkpoints();
  return saved.empty() ? std::string() : saved.back();
}

}  // namespace cvtrain
