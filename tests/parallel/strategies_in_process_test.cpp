// Strategies at world size 2 without spawning the binary: two ranks as two threads of this process,
// each with its own Gloo process group over a loopback TCPStore, each running the real TrainStep
// on half of a batch. Their weights after the step equal one process's step on the whole batch.
#include "torch_catch.h"

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>

#include <deque>
#include <exception>
#include <stdexcept>
#include <thread>

#include "cvtrain/data/device_feeder.h"
#include "cvtrain/comm/communicator.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/optim/optimizer.h"
#include "cvtrain/parallel/strategy.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/train/loss_scaler.h"
#include "cvtrain/train/train_step.h"
#include "run_shell.h"

using namespace cvtrain;

namespace {

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

std::shared_ptr<Classifier> seeded_mlp() {
  torch::manual_seed(0);
  ModelSpec spec;
  spec.arch = "mlp";
  spec.image_size = 8;
  spec.num_classes = 4;
  return build_model(spec, 1);
}

// One optimizer step of `model` under `kind` on `images`, as rank `comm.rank()` of its group
// (run on the ranks' threads: throws instead of using Catch's macros).
void train_one_step(Classifier& model, StrategyKind kind, Communicator& comm, const at::Tensor& images, const at::Tensor& labels) {
  std::unique_ptr<Strategy> strategy = make_strategy(kind, model, comm, 25, false);
  OptimSpec optim;
  optim.name = OptimizerKind::kAdamw;
  optim.lr = 0.01;
  optim.weight_decay = 0.05;
  // AdamW's first step moves each weight by about lr x g / (|g| + eps): with the default 1e-8, a
  // gradient near zero turns the last bits of the sum's order (two halves all-reduced against one
  // whole batch) into a 1e-4 difference. A larger eps keeps the update smooth in g.
  optim.eps = 1e-3;
  std::unique_ptr<torch::optim::Optimizer> optimizer = build_optimizer(optim, strategy->optimizer_parameters());
  LossScaler scaler(false, c10::Device(c10::kCPU));
  StepSettings settings;
  settings.num_classes = 4;
  settings.grad_clip = 0.5;  // the global norm: across ranks, and across shards under zero2
  TrainStep step(StepParts{model, *strategy, *optimizer, scaler, comm, c10::Device(c10::kCPU)}, settings);
  OneBatch batch(DeviceBatch{images, labels, 0});
  const StepOutput out = step.run(batch, StepInput{1, 0, optim.lr, 0});
  if (!out.applied) throw std::runtime_error("the step was skipped");  // Catch's macros are not for other threads
  strategy->gather_parameters();
}

at::Tensor flat_weights(Classifier& model) {
  std::vector<at::Tensor> flat;
  for (const auto& p : model.parameters()) flat.push_back(p.detach().flatten());
  return at::cat(flat);
}

}  // namespace

TEST_CASE("ddp and zero2 with two in-process ranks equal one process on the whole batch", "[parallel]") {
  const at::Tensor images = at::randn({8, 1, 8, 8}), labels = at::arange(8) % 4;
  auto whole = seeded_mlp();
  auto alone = single_process_communicator();
  train_one_step(*whole, StrategyKind::kSingle, *alone, images, labels);

  for (const StrategyKind kind : {StrategyKind::kDdp, StrategyKind::kZero2}) {
    INFO("strategy " << name_of(kind));
    std::vector<std::shared_ptr<Classifier>> models{seeded_mlp(), seeded_mlp()};  // built here: the seed is process-wide
    const int port = std::stoi(cvtrain::testing::port());
    std::vector<std::exception_ptr> failures(2);
    std::vector<std::thread> ranks;
    for (int rank = 0; rank < 2; ++rank)
      ranks.emplace_back([&, rank] {
        try {
          auto comm = connect(GroupSpec{rank, 2, "127.0.0.1", port, "gloo", std::chrono::seconds(60)});
          train_one_step(*models[static_cast<size_t>(rank)], kind, *comm, images.narrow(0, 4 * rank, 4), labels.narrow(0, 4 * rank, 4));
          comm->barrier("end of the test");
        } catch (...) {
          failures[static_cast<size_t>(rank)] = std::current_exception();
        }
      });
    for (auto& t : ranks) t.join();
    for (const auto& failure : failures)
      if (failure) std::rethrow_exception(failure);
    CHECK(at::equal(flat_weights(*models[0]), flat_weights(*models[1])));
    CHECK(at::allclose(flat_weights(*models[0]), flat_weights(*whole), 1e-5, 1e-6));
    CHECK_FALSE(at::allclose(flat_weights(*models[0]), flat_weights(*seeded_mlp()), 1e-3, 1e-3));  // the step moved them
  }
}
