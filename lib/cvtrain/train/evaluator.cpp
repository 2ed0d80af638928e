// Every validation sample is counted exactly once (no dropped last batch).
#include "cvtrain/train/evaluator.h"

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>
#include <torch/utils.h>

#include "cvtrain/comm/communicator.h"
#include "cvtrain/data/batch_loader.h"
#include "cvtrain/data/device_feeder.h"
#include "cvtrain/data/host_normalize.h"
#include "cvtrain/data/sample_pipeline.h"
#include "cvtrain/data/sampler.h"
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
  // synchronisation per batch. Sums of ones in doubles are exact in any order. `usable`: 0 where
  // a slot stands in for an unreadable sample (a miss of its class, no prediction); undefined: all 1.
  void add(const at::Tensor& labels, const at::Tensor& top1, const at::Tensor& usable) {
    const at::Tensor ones = at::ones_like(labels, labels.options().dtype(at::kDouble));
    const at::Tensor counted = usable.defined() ? usable : ones;
    per_class[0].index_add_(0, labels, ones);
    per_class[1].index_add_(0, labels, top1.eq(labels).to(at::kDouble) * counted);
    if (confusion.defined()) confusion.index_add_(0, labels * outputs + top1, counted);
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

// The loader fills an unreadable sample's slot with the next readable one (what training wants).
// Evaluation scores each sample once, so such a slot counts as a miss of the unreadable sample's own
// class and stays out of the loss. nullopt for a batch without one: the usual case costs nothing.
struct StandIns {
  at::Tensor labels;  // the batch's labels, with each standing-in slot's the unreadable sample's
  at::Tensor usable;  // double [B]: 0 where a slot stands in, else 1
};

std::optional<StandIns> stand_ins(const DeviceBatch& batch, const std::vector<int64_t>& order, int64_t first, const Dataset& dataset,
                                  const BadSamples* bad) {
  if (!bad || bad->count() == 0) return std::nullopt;
  std::vector<int64_t> slots, own_labels;
  for (int64_t i = 0; i < batch.targets.size(0); ++i)
    if (const auto index = static_cast<size_t>(dataset_index(order[static_cast<size_t>(first + i)])); bad->contains(index)) {
      slots.push_back(i);
      own_labels.push_back(dataset.label(index));
    }
  if (slots.empty()) return std::nullopt;
  const c10::Device device = batch.targets.device();
  const at::Tensor at_slots = at::tensor(slots).to(device);
  StandIns s{batch.targets.clone(), at::ones({batch.targets.size(0)}, at::TensorOptions(device).dtype(at::kDouble))};
  s.labels.index_copy_(0, at_slots, at::tensor(own_labels).to(device));
  s.usable.index_fill_(0, at_slots, 0.0);
  return s;
}

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
  eval_options.normalize = host_normalize(feed);
  const std::vector<int64_t> order = eval_share(dataset.size(), comm.world_size(), comm.rank());
  BatchLoader loader(dataset, order, eval_options);
  DeviceFeeder feeder(loader, feed);

  // [loss sum, top-1 hits, top-5 hits, samples in the loss] in one tensor: one all-reduce at the end.
  at::Tensor sums = at::zeros({4}, at::TensorOptions(device).dtype(at::kDouble));
  at::Tensor loss_sum = sums[0], top1 = sums[1], top5 = sums[2], loss_samples = sums[3];
  const int64_t k = std::min<int64_t>(5, dataset.num_classes());
  ClassTally tally(dataset.num_classes(), std::max(outputs, dataset.num_classes()), device);
  int64_t consumed = 0;
  while (auto batch = feeder.next()) {
    const at::Tensor& images = batch->images;
    const std::optional<StandIns> stand_in = stand_ins(*batch, order, consumed, dataset, options.bad_samples);
    consumed += batch->targets.size(0);
    const at::Tensor& labels = stand_in ? stand_in->labels : batch->targets;
    const at::Tensor usable = stand_in ? stand_in->usable : at::Tensor();
    at::Tensor logits;
    {
      AutocastScope autocast(precision, device.type());
      logits = model.forward(images);
    }
    logits = logits.to(at::kFloat);
    namespace F = torch::nn::functional;
    const at::Tensor predicted = std::get<1>(logits.topk(k, 1));
    const at::Tensor hits = predicted.eq(labels.unsqueeze(1));
    if (usable.defined()) {
      loss_sum += (F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions().reduction(torch::kNone)).to(at::kDouble) * usable).sum();
      loss_samples += usable.sum();
      top1 += (hits.select(1, 0) * usable).sum();
      top5 += (hits.any(1) * usable).sum();
    } else {
      loss_sum += F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions().reduction(torch::kSum));
      loss_samples += labels.size(0);
      top1 += hits.select(1, 0).sum();
      top5 += hits.any(1).sum();
    }
    tally.add(labels, predicted.select(1, 0), usable);
  }
  model.train(was_training);
  comm.all_reduce_sum(sums, "evaluation all-reduce");
  const at::Tensor totals = sums.cpu();
  const auto n = static_cast<double>(dataset.size());
  EvalResult result;
  result.loss = totals[0].item<double>() / std::max(1.0, totals[3].item<double>());
  result.top1 = totals[1].item<double>() / n;
  result.top5 = totals[2].item<double>() / n;
  result.samples = static_cast<int64_t>(dataset.size());
  result.per_class = tally.summed(comm);
  result.scores = {{"top1", result.top1}, {"top5", result.top5}};
  return result;
}

int64_t unusable_over_ranks(const BadSamples& bad, Communicator& comm, const c10::Device& device) {
  at::Tensor count = at::full({1}, static_cast<double>(bad.count()), at::TensorOptions(device).dtype(at::kDouble));
  comm.all_reduce_sum(count, "all-reduce of the unusable validation samples");
  return static_cast<int64_t>(count.cpu().item<double>());
}

}  // namespace cvtrain
