// One rank's training parts for in-process tests: a seeded mlp on 1x8x8 images with 4 classes,
// a strategy, AdamW and the real TrainStep, stepped one batch at a time.
#pragma once

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "cvtrain/comm/communicator.h"
#include "cvtrain/data/device_feeder.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/optim/optimizer.h"
#include "cvtrain/parallel/strategy.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/train/loss_scaler.h"
#include "cvtrain/train/task.h"
#include "cvtrain/train/train_step.h"

namespace cvtrain::testing {

class OneBatch : public BatchSource {
 public:
  explicit OneBatch(DeviceBatch batch) : batch_(std::move(batch)) {}
  std::optional<DeviceBatch> next() override {
    if (!batch_) return std::nullopt;
    std::optional<DeviceBatch> b = std::move(batch_);
    batch_.reset();
    return b;
  }

 private:
  std::optional<DeviceBatch> batch_;
};

// Built on the test's thread: the seed is process-wide.
inline std::shared_ptr<Classifier> seeded_mlp(uint64_t seed = 0) {
  torch::manual_seed(seed);
  ModelSpec spec;
  spec.arch = "mlp";
  spec.image_size = 8;
  spec.num_classes = 4;
  return build_model(spec, 1);
}

inline at::Tensor flat_weights(Classifier& model) {
  std::vector<at::Tensor> flat;
  for (const auto& p : model.parameters()) flat.push_back(p.detach().flatten().clone());
  return at::cat(flat);
}

inline OptimSpec replica_optimizer() {
  OptimSpec optim;
  optim.name = OptimizerKind::kAdamw;
  optim.lr = 0.01;
  optim.weight_decay = 0.05;
  // AdamW's first step moves each weight by about lr x g / (|g| + eps): with the default 1e-8, a
  // gradient near zero turns the last bits of the sum's order (two halves all-reduced against one
  // whole batch) into a 1e-4 difference. A larger eps keeps the update smooth in g.
  optim.eps = 1e-3;
  return optim;
}

// `model` under `kind` as rank `comm.rank()`, with AdamW (replica_optimizer) and fp32.
struct Replica {
  Replica(std::shared_ptr<Classifier> m, StrategyKind kind, Communicator& comm)
      : model(std::move(m)),
        strategy(make_strategy(kind, *model, comm, 25, false)),
        optimizer(build_optimizer(replica_optimizer(), strategy->optimizer_parameters())),
        scaler(false, c10::Device(c10::kCPU)) {}

  // Optimizer step number `step` on `images`; throws when it was skipped (the ranks' threads may
  // not use Catch's macros).
  void step(Communicator& comm, int64_t number, const at::Tensor& images, const at::Tensor& labels) {
    StepSettings settings;
    settings.num_classes = 4;
    settings.grad_clip = 0.5;                                       // the global norm: across ranks, and across shards under zero2
    static const std::unique_ptr<Task> task = make_task(Recipe{});  // classification: cross-entropy
    TrainStep train_step(StepParts{*model, *task, *strategy, *optimizer, scaler, comm, c10::Device(c10::kCPU)}, settings);
    OneBatch batch(DeviceBatch{images, labels, 0});
    if (!train_step.run(batch, StepInput{number, 0, replica_optimizer().lr, 0}).applied) throw std::runtime_error("a step was skipped");
  }
  // The whole model's weights (shards gathered first).
  at::Tensor weights() {
    strategy->gather_parameters();
    return flat_weights(*model);
  }

  std::shared_ptr<Classifier> model;
  std::unique_ptr<Strategy> strategy;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  LossScaler scaler;
};

}  // namespace cvtrain::testing
