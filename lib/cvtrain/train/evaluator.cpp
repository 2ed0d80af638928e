// Every validation sample is counted exactly once (no dropped last batch).
#include "cvtrain/train/evaluator.h"

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>
#include <torch/utils.h>

#include <numeric>

#include "cvtrain/data/batch_loader.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/train/precision.h"

namespace cvtrain {

EvalResult evaluate(Classifier& model, const Dataset& dataset, const LoaderOptions& options, c10::Device device,
                    const std::string& precision) {
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  std::vector<int64_t> order(dataset.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  LoaderOptions eval_options = options;
  eval_options.drop_last = false;
  eval_options.transform.augment = nullptr;
  BatchLoader loader(dataset, std::move(order), eval_options);

  at::Tensor loss_sum = at::zeros({}, at::TensorOptions(device).dtype(at::kDouble));
  at::Tensor top1 = at::zeros({}, at::TensorOptions(device).dtype(at::kLong));
  at::Tensor top5 = at::zeros({}, at::TensorOptions(device).dtype(at::kLong));
  const int64_t k = std::min<int64_t>(5, dataset.num_classes());
  while (auto batch = loader.next()) {
    const at::Tensor images = batch->images.to(device, /*non_blocking=*/true);
    const at::Tensor labels = batch->labels.to(device, /*non_blocking=*/true);
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
  const auto n = static_cast<double>(dataset.size());
  return EvalResult{loss_sum.item<double>() / n, static_cast<double>(top1.item<int64_t>()) / n,
                    static_cast<double>(top5.item<int64_t>()) / n, static_cast<int64_t>(dataset.size())};
}

}  // namespace cvtrain
