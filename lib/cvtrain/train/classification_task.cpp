// Classification as a Task: images with labels, cross-entropy or BCE (classification_loss.h),
// top-1 and top-5 by evaluator.h; and the factory that picks a run's task.
#include <ATen/ATen.h>

#include "cvtrain/data/classification_batches.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/train/classification_loss.h"
#include "cvtrain/train/segmentation_task.h"
#include "cvtrain/train/task.h"

namespace cvtrain {
namespace {

class ClassificationTask : public Task {
 public:
  explicit ClassificationTask(const Recipe& recipe)
      : settings_{recipe.train.loss, recipe.augment.label_smoothing, recipe.train.bce_target_threshold} {}

  at::Tensor loss(const std::vector<at::Tensor>& outputs, const at::Tensor& targets) const override {
    return classification_loss(outputs.front().to(at::kFloat), targets, settings_);
  }
  std::shared_ptr<BatchMaker> training_batches(const Dataset& train, const LoaderOptions& options) const override {
    return std::make_shared<ClassificationBatches>(train, options);
  }
  bool decodes_on_device() const override { return true; }
  EvalResult evaluate(Classifier& model, const Dataset& dataset, const LoaderOptions& loader, const FeedOptions& feed,
                      const PrecisionPolicy& precision, Communicator& comm, int64_t outputs) const override {
    return cvtrain::evaluate(model, dataset, loader, feed, precision, comm, outputs);
  }

 private:
  LossSettings settings_;
};

}  // namespace

std::unique_ptr<Task> make_task(const Recipe& recipe) {
  if (recipe.task == TaskKind::kSegmentation) return make_segmentation_task(recipe);
  return std::make_unique<ClassificationTask>(recipe);
}

}  // namespace cvtrain
