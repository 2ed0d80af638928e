// Every validation sample is counted exactly once (no dropped last batch).
#include "cvtrain/train/evaluator.h"

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>
#include <torch/utils.h>

#include "cvtrain/data/batch_loader.h"
#include "cvtrain/data/device_feeder.h"
#include "cvtrain/data/sampler.h"
#include "cvtrain/dist/communicator.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/train/precision.h"

namespace cvtrain {

EvalResult evaluate(Classifier& model, const Dataset& dataset, const LoaderOptions& options, const FeedOptions& feed,
                    const PrecisionPolicy& precision, Communicator& comm) {
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
  }
  model.train(was_training);
  comm.all_reduce_sum(sums, "evaluation all-reduce");
  const at::Tensor totals = sums.cpu();
  const auto n = static_cast<double>(dataset.size());
  return EvalResult{totals[0].item<double>() / n, totals[1].item<double>() / n, totals[2].item<double>() / n,
                    static_cast<int64_t>(dataset.size())};
}

}  // namespace cvtrain
