// Checkpoints: one folder per step under OUTPUT/checkpoints, written under a temporary name,
// fsynced, renamed and then marked COMPLETE, so a crash mid-write never leaves one that looks
// whole. Holds weights and optimizer state by parameter name (safetensors; the same whatever the
// strategy, so a run may resume under another), RNG states, the position in the data, the
// resolved recipe and the versions of what wrote it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cvtrain/models/safetensors.h"

namespace torch::nn {
class Module;
}

namespace cvtrain {

struct Recipe;

// The weight average's file in a checkpoint folder (train.ema), beside model.safetensors.
inline constexpr const char* kEmaFile = "ema.safetensors";
// The training classes' names, one per line in label order, where the data names them (folders,
// shards, lists, data.class_names): what `cvtrain predict` labels with away from the data.
inline constexpr const char* kClassNamesFile = "classes.txt";

// Where training stands: `step` optimizer steps done, of which `batches_done` global batches
// belong to `epoch` (the data order of an epoch depends only on the seed and the epoch, so this
// is the exact place in the data, whatever the world size).
struct TrainPosition {
  int64_t step = 0;
  int64_t epoch = 0;
  int64_t batches_done = 0;
  int64_t skipped_steps = 0;  // steps skipped for non-finite loss or gradients so far
  double loss_scale = 0;      // fp16's dynamic loss scale (0: not fp16)
  int64_t scale_growth_tracker = 0;
  int64_t global_batch = 0;  // train.global_batch of the run that saved it (0: not known)
  double next_lr = -1;       // the learning rate the saving run's schedule gives the next step (-1: not known)
  // The same samples of the epoch done, counted in batches of `global` (rounded down: at most one
  // batch's samples are seen twice). Steps, and so the schedule, stay where they were.
  TrainPosition in_batches_of(int64_t global) const {
    TrainPosition moved = *this;
    if (global_batch > 0 && global > 0) moved.batches_done = batches_done * global_batch / global;
    moved.global_batch = global;
    return moved;
  }
  // The same point as the start of the next epoch, for a run that stops after an epoch's
  // evaluation: resumed, it does not evaluate that epoch again.
  TrainPosition at_next_epoch() const {
    TrainPosition next = *this;
    ++next.epoch;
    next.batches_done = 0;
    return next;
  }
};

class Checkpointer {
 public:
  Checkpointer(std::string run_dir, int64_t keep);  // in run_dir/checkpoints
  // Checkpoints directly in `folder` (checkpoint.keep_best's OUTPUT/best).
  static Checkpointer in_folder(std::string folder, int64_t keep);

  // Rank 0: writes the checkpoint of `position` (the model's parameters and buffers, and the
  // optimizer state, both by name and whole) and drops the oldest beyond `keep`. Returns its
  // folder. Throws Error naming the file on any write failure; earlier checkpoints stay intact.
  // With `ema` (train.ema's average), it is written as kEmaFile too.
  // `device` ("NVIDIA H200", "cpu: AMD EPYC ...") goes into state.txt, for build_changes_since;
  // `class_names`, when there are any, into kClassNamesFile.
  std::string save(const TrainPosition& position, const NamedTensors& model, const NamedTensors& optimizer, const Recipe& recipe,
                   const NamedTensors& ema = {}, const std::string& device = "", const std::vector<std::string>& class_names = {}) const;

  // The newest complete checkpoint whose files read back; incomplete or unreadable ones are
  // skipped with a warning naming them. nullopt when none is complete; throws Error when complete
  // ones are there but none reads back.
  std::optional<std::string> latest() const;

  // Fails early (before training) when the checkpoint folder cannot be created or written.
  void check_writable() const;

  std::string folder_of(int64_t step) const;
  const std::string& root() const { return root_; }     // the folder holding the step-N folders
  std::vector<std::string> complete_checkpoints() const;  // oldest first
  // Every checkpoint folder but `kept` (the best replaces the best before it, whatever its step).
  void remove_all_but(const std::string& kept) const;

 private:
  struct InFolder {};
  Checkpointer(std::string root, int64_t keep, InFolder) : root_(std::move(root)), keep_(keep) {}

  std::string root_;  // run_dir/checkpoints
  int64_t keep_;
};

struct CheckpointContents {
  TrainPosition position;
  NamedTensors model, optimizer;
  NamedTensors ema;        // train.ema's average; empty when the checkpoint has none
  std::string model_file;  // for messages about its tensors
};

// Reads a checkpoint folder and restores the RNG states from it. Throws Error naming the folder
// and the file for anything missing or unreadable.
CheckpointContents load_checkpoint(const std::string& folder);

// The position alone (state.txt), without touching a model.
TrainPosition read_position(const std::string& folder);

// The software and device the checkpoint in `folder` was saved by, where this process differs:
// "LibTorch 2.10.0 -> 2.11.0" (cvtrain, LibTorch, CUDA runtime, NCCL, and the device: `device`,
// as Checkpointer::save was given it). Another build or device may pick other kernels, so a resume
// across one is no longer bit for bit the uninterrupted run.
std::vector<std::string> build_changes_since(const std::string& folder, const std::string& device);

// `source` if it is a complete checkpoint folder (step-N with its COMPLETE marker), else the newest
// complete checkpoint of the run folder `source`, or of a folder of checkpoints (OUTPUT/best,
// OUTPUT/checkpoints). Throws Error naming `source` when it is none of these.
std::string checkpoint_folder_of(const std::string& source);

// model.pt (torch::save of the whole module) through a temporary name and a rename, as every
// other artifact of a run: a crash while writing leaves the earlier file whole.
void save_model_file(torch::nn::Module& model, const std::string& path);

}  // namespace cvtrain
