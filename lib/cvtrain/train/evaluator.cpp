// Every validation sample is counted exactly once (no dropped last batch).
#include "cvtrain/train/evaluator.h"

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>
#include <torch/utils.h>

#include "cvtrain/data/batch_loader.h"
#include "cvtrain/data/device_feeder.h"
#include "cvtrain/data/sample_pipeline.h"
#include "cvtrain/data/sampler.h"
#include "cvtrain/dist/communicator.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/train/precision.h"

namespace cvtrain {

namespace {

std::vector<double> as_vector(const at::Tensor& t) {
  const at::Tensor host = t.to(at::kCPU, at::kDouble).contiguous();
  return std::vector<double>(host.data_ptr<double>(), host.data_ptr<double>() + host.numel());
}

// Per true class: samples and top-1 hits, and (where it fits) true class x top-1 prediction, as
// counts on the device; every rank the same shapes, so that one all-reduce each sums them.
struct ClassTally {
  int64_t classes, outputs;
  at::Tensor per_class;  // [2, classes]: samples, hits
  at::Tensor confusion;  // [classes * outputs], or undefined when too large

  ClassTally(int64_t classes, int64_t outputs, const c10::Device& device)
      : classes(classes), outputs(outputs), per_class(at::zeros({2, classes}, at::TensorOptions(device).dtype(at::kDouble))) {
    if (classes * outputs <= kMostConfusionCells) confusion = at::zeros({classes * outputs}, at::TensorOptions(device).dtype(at::kDouble));
  }
  // index_add_, not bincount or masked_select: on CUDA those read a size back to the host, a
  // synchronisation per batch. Sums of ones in doubles are exact in any order.
  void add(const at::Tensor& labels, const at::Tensor& top1) {
    const at::Tensor ones = at::ones_like(labels, labels.options().dtype(at::kDouble));
    per_class[0].index_add_(0, labels, ones);
    per_class[1].index_add_(0, labels, top1.eq(labels).to(at::kDouble));
    if (confusion.defined()) confusion.index_add_(0, labels * outputs + top1, ones);
  }
  ClassCounts summed(Communicator& comm) {
    comm.all_reduce_sum(per_class, "evaluation per-class all-reduce");
    ClassCounts counts;
    counts.samples = as_vector(per_class[0]);
    counts.hits = as_vector(per_class[1]);
    if (confusion.defined()) {
      comm.all_reduce_sum(confusion, "evaluation confusion all-reduce");
      counts.outputs = outputs;
      counts.confusion = as_vector(confusion);
    }
    return counts;
  }
};

}  // namespace

EvalResult evaluate(Classifier& model, const Dataset& dataset, const LoaderOptions& options, const FeedOptions& feed,
                    const PrecisionPolicy& precision, Communicator& comm, int64_t outputs) {
  const c10::Device device = feed.device;
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  LoaderOptions eval_options = options;
  eval_options.drop_last = false;
  eval_options.transform.augment = nullptr;
  eval_options.keep_encoded = nullptr;  // the centre view is Pillow's, pixel for pixel: always the CPU's decode
  BatchLoader loader(dataset, eval_share(dataset.size(), comm.world_size(), comm.rank()), eval_options);
  DeviceFeeder feeder(loader, feed);

  // [loss sum, top-1 hits, top-5 hits] in one tensor: one all-reduce at the end.
  at::Tensor sums = at::zeros({3}, at::TensorOptions(device).dtype(at::kDouble));
  at::Tensor loss_sum = sums[0], top1 = sums[1], top5 = sums[2];
  const int64_t k = std::min<int64_t>(5, dataset.num_classes());
  ClassTally tally(dataset.num_classes(), std::max(outputs, dataset.num_classes()), device);
  while (auto batch = feeder.next()) {
    const at::Tensor& images = batch->images;
    const at::Tensor& labels = batch->labels;
    at::Tensor logits;
    {
      AutocastScope autocast(precision, device.type());
      logits = model.forward(images);
    }
    logits = logits.to(at::kFloat);
    loss_sum += torch::nn::functional::cross_entropy(logits, labels,
                                                     torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
    const at::Tensor predicted = std::get<1>(logits.topk(k, 1));
    const at::Tensor hits = predicted.eq(labels.unsqueeze(1));
    top1 += hits.select(1, 0).sum();
    top5 += hits.any(1).sum();
    tally.add(labels, predicted.select(1, 0));
  }
  model.train(was_training);
  comm.all_reduce_sum(sums, "evaluation all-reduce");
  const at::Tensor totals = sums.cpu();
  const auto n = static_cast<double>(dataset.size());
  return EvalResult{totals[0].item<double>() / n, totals[1].item<double>() / n, totals[2].item<double>() / n,
                    static_cast<int64_t>(dataset.size()), tally.summed(comm)};
}

int64_t unusable_over_ranks(const BadSamples& bad, Communicator& comm, const c10::Device& device) {
  at::Tensor count = at::full({1}, static_cast<double>(bad.count()), at::TensorOptions(device).dtype(at::kDouble));
  comm.all_reduce_sum(count, "all-reduce of the unusable validation samples");
  return static_cast<int64_t>(count.cpu().item<double>());
}

}  // namespace cvtrain
