// Segmentation's loss, batches and evaluation. Evaluation runs each validation image (fitted within
// augment.scale, as mmseg's test pipeline resizes it) whole or by sliding windows, resizes the
// logits back to the mask's size (bilinear, as mmseg's) and counts every labelled pixel once across ranks.
#include "cvtrain/train/segmentation_task.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/nn/functional/loss.h>
#include <torch/utils.h>

#include <cmath>

#include "cvtrain/comm/communicator.h"
#include "cvtrain/core/error.h"
#include "cvtrain/data/batch_loader.h"
#include "cvtrain/data/device_feeder.h"
#include "cvtrain/data/sampler.h"
#include "cvtrain/data/segmentation_batches.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/recipe/task_checks.h"
#include "cvtrain/train/confusion_matrix.h"
#include "cvtrain/train/precision.h"
#include "cvtrain/train/sliding_window.h"

namespace cvtrain {
namespace {

namespace F = torch::nn::functional;

const SegmentationDataset& pairs_of(const Dataset& dataset) {
  const auto* pairs = dynamic_cast<const SegmentationDataset*>(&dataset);
  if (!pairs) throw Error("task: segmentation needs image and mask pairs (data.format voc, ade20k, cityscapes or an image,mask list)");
  return *pairs;
}

class SegmentationTask : public Task {
 public:
  explicit SegmentationTask(const Recipe& recipe)
      : augment_(joint_augment(recipe)),
        ignore_index_(recipe.data.ignore_index),
        aux_weight_(recipe.train.aux_loss_weight),
        inference_(recipe) {
    if (!recipe.train.class_weights.empty()) class_weights_ = at::tensor(recipe.train.class_weights, at::kFloat);
  }

  at::Tensor loss(const std::vector<at::Tensor>& outputs, const at::Tensor& targets) const override {
    if (class_weights_.defined() && class_weights_.device() != targets.device()) class_weights_ = class_weights_.to(targets.device());
    at::Tensor loss = pixel_cross_entropy(outputs.front().to(at::kFloat), targets, ignore_index_, class_weights_);
    if (outputs.size() > 1 && aux_weight_ > 0)
      loss = loss + aux_weight_ * pixel_cross_entropy(outputs[1].to(at::kFloat), targets, ignore_index_, class_weights_);
    return loss;
  }

  std::shared_ptr<BatchMaker> training_batches(const Dataset& train, const LoaderOptions& options) const override {
    return std::make_shared<SegmentationBatches>(
        pairs_of(train), SegmentationView{true, augment_, options.transform.seed, options.transform.epoch}, options.timings);
  }

  bool decodes_on_device() const override { return false; }
  EvalResult evaluate(Classifier& model, const Dataset& dataset, const LoaderOptions& loader, const FeedOptions& feed,
                      const PrecisionPolicy& precision, Communicator& comm, int64_t outputs) const override;

 private:
  JointAugment augment_;
  int64_t ignore_index_;
  double aux_weight_;
  SegmentationInference inference_;
  mutable at::Tensor class_weights_;  // moved to the targets' device on first use
};

EvalResult SegmentationTask::evaluate(Classifier& model, const Dataset& dataset, const LoaderOptions& loader, const FeedOptions& feed,
                                      const PrecisionPolicy& precision, Communicator& comm, int64_t outputs) const {
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  LoaderOptions options = loader;
  options.batch_size = 1;  // images of their own sizes, one at a time
  options.drop_last = false;
  BatchLoader batches(std::make_shared<SegmentationBatches>(pairs_of(dataset), SegmentationView{false, augment_, 0, 0}),
                      eval_share(dataset.size(), comm.world_size(), comm.rank()), options);
  DeviceFeeder feeder(batches, feed);
  ConfusionMatrix matrix(outputs, ignore_index_, feed.device);
  at::Tensor sums = at::zeros({2}, at::TensorOptions(feed.device).dtype(at::kDouble));  // loss x pixels, labelled pixels
  while (auto batch = feeder.next()) {
    const at::Tensor& truth = batch->targets;
    const at::Tensor logits = inference_.logits(model, batch->images, precision, {truth.size(1), truth.size(2)});
    const at::Tensor labelled = truth.ne(ignore_index_).sum().to(at::kDouble);
    sums[0] += pixel_cross_entropy(logits, truth, ignore_index_, at::Tensor()).to(at::kDouble) * labelled;
    sums[1] += labelled;
    matrix.add(logits.argmax(1), truth);
  }
  model.train(was_training);
  comm.all_reduce_sum(sums, "evaluation loss all-reduce");
  const SegmentationScores scores = matrix.scores(&comm);
  const at::Tensor totals = sums.cpu();
  EvalResult result;
  result.loss = totals[0].item<double>() / std::max(1.0, totals[1].item<double>());
  result.samples = static_cast<int64_t>(dataset.size());
  result.scores = {{"miou", scores.miou}, {"pixel_acc", scores.pixel_accuracy}, {"macc", scores.mean_accuracy}};
  result.class_iou = scores.class_iou;
  return result;
}

}  // namespace

SegmentationInference::SegmentationInference(const Recipe& recipe)
    : slide_(recipe.data.eval_mode == EvalMode::kSlide), window_(sliding_window(recipe)) {}

at::Tensor SegmentationInference::logits(Classifier& model, const at::Tensor& images, const PrecisionPolicy& precision,
                                         at::IntArrayRef size) const {
  at::Tensor logits;
  {
    AutocastScope autocast(precision, images.device().type());
    const auto forward = [&model](const at::Tensor& input) { return model.forward(input); };
    logits = slide_ ? slide_logits(forward, images, window_) : forward(images);
  }
  logits = logits.to(at::kFloat);
  if (logits.size(2) != size[0] || logits.size(3) != size[1]) logits = at::upsample_bilinear2d(logits, size, /*align_corners=*/false);
  return logits;
}

JointAugment joint_augment(const Recipe& recipe) {
  JointAugment a;
  const auto [height, width] = crop_size(recipe);
  a.crop_height = static_cast<int>(height);
  a.crop_width = static_cast<int>(width);
  if (recipe.augment.scale.size() == 2) {
    a.scale_long = static_cast<int>(recipe.augment.scale[0]);
    a.scale_short = static_cast<int>(recipe.augment.scale[1]);
    a.ratio_min = recipe.augment.ratio_range[0];
    a.ratio_max = recipe.augment.ratio_range[1];
  }
  a.cat_max_ratio = recipe.augment.cat_max_ratio;
  a.hflip = recipe.augment.hflip.p;
  a.photometric = recipe.augment.photometric;
  a.ignore_index = static_cast<int>(recipe.data.ignore_index);
  for (size_t c = 0; c < 3 && c < recipe.data.mean.size(); ++c)  // normalised, the padding is about 0, as mmseg pads
    a.pad_colour[c] = static_cast<uint8_t>(std::lround(255 * recipe.data.mean[c]));
  return a;
}

at::Tensor pixel_cross_entropy(const at::Tensor& logits, const at::Tensor& targets, int64_t ignore_index, const at::Tensor& class_weights) {
  const at::Tensor t = targets.to(at::kLong);
  auto options = F::CrossEntropyFuncOptions().ignore_index(ignore_index).reduction(torch::kNone);
  if (class_weights.defined()) options.weight(class_weights);
  const at::Tensor per_pixel = F::cross_entropy(logits, t, options);  // 0 where ignored
  const at::Tensor labelled = t.ne(ignore_index);
  at::Tensor weight = labelled.to(at::kFloat);
  if (class_weights.defined()) weight = weight * class_weights.index({at::where(labelled, t, at::zeros_like(t))});
  return per_pixel.sum() / weight.sum().clamp_min(1e-12);  // nothing labelled: 0 / tiny = 0, and zero gradients
}

std::unique_ptr<Task> make_segmentation_task(const Recipe& recipe) { return std::make_unique<SegmentationTask>(recipe); }

}  // namespace cvtrain
