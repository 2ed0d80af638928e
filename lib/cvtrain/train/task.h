// What differs by task (recipe `task`: classification | segmentation), behind one interface chosen
// once per run: the batches a sample becomes, the loss, and the evaluation with its scores. The step,
// the strategies, checkpoints, the profiler and the launcher only ever see a Task.
// docs/development.md, "How to add a task".
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

#include "cvtrain/train/evaluator.h"

namespace cvtrain {

class BatchMaker;
class Classifier;
class Communicator;
class Dataset;
struct FeedOptions;
struct LoaderOptions;
struct Recipe;

class Task {
 public:
  virtual ~Task() = default;
  // The loss of one micro-batch: the model's outputs (Classifier::forward_outputs, the main one
  // first) against the batch's targets (after Mixup/CutMix, for classification). A float scalar.
  virtual at::Tensor loss(const std::vector<at::Tensor>& outputs, const at::Tensor& targets) const = 0;
  // The training batches of one epoch (`options` carries the epoch, the augmentation and the timings).
  virtual std::shared_ptr<BatchMaker> training_batches(const Dataset& train, const LoaderOptions& options) const = 0;
  // Whether data.decoder nvjpeg may take its images (classification's crops can be rendered on the device).
  virtual bool decodes_on_device() const = 0;
  // One pass over `dataset`, every sample once across the ranks (each its eval_share): the loss and
  // the task's scores, the same on every rank. Collective. `outputs`: model.num_classes.
  virtual EvalResult evaluate(Classifier& model, const Dataset& dataset, const LoaderOptions& loader, const FeedOptions& feed,
                              const PrecisionPolicy& precision, Communicator& comm, int64_t outputs) const = 0;
};

std::unique_ptr<Task> make_task(const Recipe& recipe);

}  // namespace cvtrain
