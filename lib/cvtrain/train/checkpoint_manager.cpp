// Saving and resuming across ranks (see checkpoint_manager.h).
#include "cvtrain/train/checkpoint_manager.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "cvtrain/comm/communicator.h"
#include "cvtrain/core/error.h"
#include "cvtrain/core/json_reader.h"
#include "cvtrain/core/log.h"
#include "cvtrain/core/text.h"
#include "cvtrain/core/text_file.h"
#include "cvtrain/core/this_machine.h"
#include "cvtrain/observe/device_info.h"
#include "cvtrain/observe/metric_records.h"
#include "cvtrain/optim/lr_schedule.h"
#include "cvtrain/parallel/strategy.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/recipe/recipe_changes.h"
#include "cvtrain/recipe/recipe_schema.h"
#include "cvtrain/recipe/task_checks.h"
#include "cvtrain/train/loss_scaler.h"

namespace cvtrain {

namespace fs = std::filesystem;

namespace {

// A checkpoint whose weights do not fit this run's model: most often the recipe's model changed
// since, which the message then says, with the ways on.
std::string with_model_changes(const std::string& error, const std::string& folder, const std::vector<KeyChange>& changes) {
  std::vector<KeyChange> model;
  for (const KeyChange& c : changes)
    if (c.key.rfind("model.", 0) == 0) model.push_back(c);
  if (model.empty()) return error;
  const bool same_arch = std::none_of(model.begin(), model.end(), [](const KeyChange& c) { return c.key == "model.arch"; });
  return fmt::format(
      "{}. {} was saved with another model ({}): give this run another output, or resume with the model it was saved "
      "with{}",
      error, folder, describe_changes(model),
      same_arch ? fmt::format(", or start afresh from its weights where they fit (checkpoint.resume=none "
                              "model.pretrained={}/model.safetensors)",
                              folder)
                : "");
}

// Rank 0's choice for checkpoint.resume: auto: the newest readable checkpoint's step, -1 when there
// is none (start over), -2 when complete ones are there but none reads back (`refusal` says why).
double newest_readable_step(const Checkpointer& files, std::string& refusal) {
  try {
    if (const auto latest = files.latest()) return static_cast<double>(read_position(*latest).step);
    return -1;
  } catch (const Error& e) {
    refusal = e.what();
    return -2;
  }
}

}  // namespace

CheckpointManager::CheckpointManager(const Recipe& recipe, Communicator& comm, c10::Device device, const LrSchedule& schedule,
                                     std::vector<std::string> class_names)
    : files_(recipe.output, recipe.checkpoint.keep),
      best_files_(Checkpointer::in_folder(recipe.output + "/best", 1)),
      best_(resolved_best_metric(recipe)),
      best_metric_(name_of(resolved_best_metric(recipe))),
      cadence_(recipe.checkpoint),
      comm_(comm),
      device_(device),
      schedule_(schedule),
      global_batch_(recipe.train.global_batch),
      optimizer_name_(name_of(recipe.optim.name)),
      resolved_recipe_(recipe_to_yaml(recipe)),
      class_names_(std::move(class_names)) {}

void CheckpointManager::save(TrainPosition position, Strategy& strategy, torch::optim::Optimizer& optimizer, const LossScaler& scaler,
                             const Recipe& recipe, const NamedTensors& ema) {
  if (position.step == last_saved_step_ && position.epoch == last_saved_epoch_) return;
  const std::string folder = write(files_, position, strategy, optimizer, scaler, recipe, ema);
  if (comm_.rank() == 0) log::info("checkpoint: {}", folder);
  last_saved_step_ = position.step;
  last_saved_epoch_ = position.epoch;
  since_save_.reset();
}

// Every rank contributes its shards, rank 0 writes them into `files` (its folder is returned there),
// and every rank learns whether that worked.
std::string CheckpointManager::write(const Checkpointer& files, TrainPosition position, Strategy& strategy,
                                     torch::optim::Optimizer& optimizer, const LossScaler& scaler, const Recipe& recipe,
                                     const NamedTensors& ema) {
  std::string failure, folder;
  strategy.gather_parameters();
  const NamedTensors model_state = strategy.model_state();
  strategy.release_parameters();
  const NamedTensors optimizer_state = strategy.optimizer_state(optimizer);
  if (comm_.rank() == 0) {
    try {
      const LossScalerState scale = scaler.state();
      position.loss_scale = scaler.enabled() ? scale.scale : 0;
      position.next_lr = schedule_.at(position.step);  // for a resume under another schedule
      position.scale_growth_tracker = scale.growth_tracker;
      folder = files.save(position, model_state, optimizer_state, recipe, ema, device_label(), class_names_);
    } catch (const Error& e) {
      failure = e.what();
    }
  }
  at::Tensor failed = at::full({1}, failure.empty() ? 0.0f : 1.0f, at::TensorOptions(device_).dtype(at::kFloat));
  if (comm_.world_size() > 1) comm_.all_reduce_sum(failed, "checkpoint status all-reduce");
  if (failed.item<float>() > 0) throw Error(failure.empty() ? "rank 0 could not write a checkpoint (see its log)" : failure);
  return folder;
}

std::optional<double> CheckpointManager::score_of(const EpochRecord& record) const {
  if (!record.eval) return std::nullopt;
  return best_.score(record.eval->main(), record.eval_ema ? std::optional<double>(record.eval_ema->main()) : std::nullopt);
}

bool CheckpointManager::beats_best(const EpochRecord& record) const {
  const std::optional<double> score = score_of(record);
  return score && best_.improves(*score);
}

void CheckpointManager::save_best(const TrainPosition& position, const EpochRecord& record, Strategy& strategy,
                                  torch::optim::Optimizer& optimizer, const LossScaler& scaler, const Recipe& recipe, const NamedTensors& ema) {
  const double score = *score_of(record);
  const std::string folder = write(best_files_, position, strategy, optimizer, scaler, recipe, ema);
  best_.take(score);
  if (comm_.rank() != 0) return;
  best_files_.remove_all_but(folder);
  write_best_summary(folder, record, score);
  log::info("best {} so far ({:.4f}, epoch {}): checkpoint {}", best_metric_, score, record.epoch, folder);
}

// best.json: which epoch the best checkpoint is and its figures, exact (shortest round-trip form: a
// resumed run compares its epochs with this score). Rank 0 alone, after the collective: a failure
// here is a warning, never an error that would leave the other ranks waiting.
void CheckpointManager::write_best_summary(const std::string& folder, const EpochRecord& record, double score) const {
  std::string scores;
  for (const auto& [name, value] : record.eval->scores) scores += fmt::format("\"{}\": {}, ", name, value);
  if (record.eval_ema)
    for (const auto& [name, value] : record.eval_ema->scores) scores += fmt::format("\"{}_ema\": {}, ", name, value);
  try {
    write_file_atomically(
        best_files_.root() + "/best.json",
        fmt::format("{{\"metric\": \"{}\", \"score\": {}, \"epoch\": {}, \"step\": {}, {}\"loss\": {}, \"checkpoint\": {}}}\n",
                    best_metric_, score, record.epoch, record.step, scores, record.eval->loss, json_string(folder)));
  } catch (const Error& e) {
    log::warn("best.json could not be written ({}); the best checkpoint itself is complete: {}", e.what(), folder);
  }
}

// The best of the run so far, when it resumes: best.json's, unless it was saved beyond the step
// resumed from (a run resumed from an older checkpoint judges its epochs afresh).
void CheckpointManager::restore_best(int64_t resumed_step) {
  const std::string path = best_files_.root() + "/best.json";
  std::error_code ec;
  if (!fs::exists(path, ec)) return;
  try {
    const std::optional<std::string> text = read_text_file(path);
    if (!text) return;
    const JsonValue best = parse_json(*text, path);
    const std::optional<double> score = best.number("score"), step = best.number("step");
    if (score && step && *step <= static_cast<double>(resumed_step) && best.text("metric") == best_metric_) best_.take(*score);
  } catch (const Error& e) {
    if (comm_.rank() == 0) log::warn("{} is unreadable ({}); the next evaluated epoch becomes the best", path, e.what());
  }
}

std::optional<ResumedRun> CheckpointManager::resume(const ResumeChoice& resume, Strategy& strategy, torch::optim::Optimizer& optimizer) {
  std::string folder = resume.folder;
  switch (resume.mode) {
    case ResumeMode::kNone:
      return std::nullopt;
    case ResumeMode::kAuto: {
      // Rank 0 chooses (-1: none, start over; -2: refused, every rank stops with its reason).
      at::Tensor chosen = at::full({1}, -1.0, at::TensorOptions(device_).dtype(at::kDouble));
      std::string refusal = "rank 0 found no checkpoint to resume from that reads back (its error says which)";
      if (comm_.rank() == 0) chosen.fill_(newest_readable_step(files_, refusal));
      if (comm_.world_size() > 1) comm_.broadcast(chosen, 0, "broadcast of the checkpoint to resume from");
      const auto step = static_cast<int64_t>(chosen.item<double>());
      if (step == -2) throw Error(refusal);
      if (step < 0) return std::nullopt;
      folder = files_.folder_of(step);
      break;
    }
    case ResumeMode::kFolder:  // a checkpoint folder, or a run folder's newest complete one (as export and eval take)
      folder = checkpoint_folder_of(resume.folder);
      break;
  }
  const CheckpointContents saved = load_checkpoint(folder);
  const std::vector<KeyChange> changes = recipe_changes_since(folder);  // before the loads, whose errors they may explain
  if (const std::vector<std::string> builds = build_changes_since(folder, device_label()); !builds.empty() && comm_.rank() == 0)
    log::info("{} was saved by another build or device ({}): the run continues, though no longer bit for bit as one would have run it",
              folder, join(builds, ", "));
  try {
    strategy.load_model_state(saved.model, saved.model_file);
  } catch (const Error& e) {
    throw Error(with_model_changes(e.what(), folder, changes));
  }
  try {
    strategy.load_optimizer_state(optimizer, saved.optimizer);
  } catch (const Error& e) {
    throw Error(fmt::format("{}/optimizer.safetensors does not fit this run's optimizer (optim.name {}): {}. Resume with the optimizer "
                            "it was saved with, or keep only its weights: checkpoint.resume=none model.pretrained={}/model.safetensors",
                            folder, optimizer_name_, e.what(), folder));
  }
  last_saved_step_ = saved.position.step;
  last_saved_epoch_ = saved.position.epoch;
  restore_best(saved.position.step);
  if (const auto jump = lr_jump(saved.position.next_lr, schedule_.at(saved.position.step), saved.position.step, folder);
      jump && comm_.rank() == 0)
    jump->climbs ? log::warn("{}", jump->message) : log::info("{}", jump->message);
  return ResumedRun{folder, position_in_this_run(saved.position, folder), saved.ema};
}

// The device as state.txt names it: the GPU's name, or the CPU's model (CPU kernels differ by it too).
std::string CheckpointManager::device_label() const { return device_.is_cuda() ? device_name(device_) : "cpu: " + cpu_model(); }

// A resume with other data, optimizer or schedule settings continues, with this run's values; it
// says which, since the run is then no exact continuation of the one saved.
std::vector<KeyChange> CheckpointManager::recipe_changes_since(const std::string& folder) const {
  const std::optional<std::string> saved = read_text_file(folder + "/recipe.yaml");
  if (!saved) return {};
  try {
    std::vector<KeyChange> changes = recipe_changes(*saved, resolved_recipe_);
    if (!changes.empty() && comm_.rank() == 0)
      log::info("{} was saved with another recipe; training continues with this run's values of {} key(s): {}", folder, changes.size(),
                describe_changes(changes));
    return changes;
  } catch (const std::exception& e) {
    if (comm_.rank() == 0) log::warn("{}/recipe.yaml: unreadable ({}); recipe changes since the checkpoint are not listed", folder, e.what());
    return {};
  }
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
