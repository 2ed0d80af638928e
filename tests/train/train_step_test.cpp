// One optimizer step in process: a clean step updates the weights, a non-finite one is skipped and
// counted until train.max_bad_steps gives up, an fp16 overflow is skipped without counting and
// halves the scale; accumulation of k micro-batches equals one step on the whole batch. The same
// with optim.implementation: fused, whose skips are decided on the device, and the two agree; and
// the body a CUDA graph captures (train.cuda_graphs), run as is on the CPU, agrees with both.
#include "torch_catch.h"

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>

#include <cstdlib>
#include <deque>

#include "cvtrain/comm/communicator.h"
#include "cvtrain/data/device_feeder.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/optim/optimizer.h"
#include "cvtrain/parallel/strategy.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/train/loss_scaler.h"
#include "cvtrain/train/step_graph.h"
#include "cvtrain/train/task.h"
#include "cvtrain/train/train_step.h"

using namespace cvtrain;

namespace {

// Batches handed out in order, then none.
class QueuedBatches : public BatchSource {
 public:
  explicit QueuedBatches(std::deque<DeviceBatch> batches) : batches_(std::move(batches)) {}
  std::optional<DeviceBatch> next() override {
    if (batches_.empty()) return std::nullopt;
    DeviceBatch b = batches_.front();
    batches_.pop_front();
    return b;
  }

 private:
  std::deque<DeviceBatch> batches_;
};

DeviceBatch batch_of(const at::Tensor& images, const at::Tensor& labels) { return DeviceBatch{images, labels, 0}; }

// An mlp on 1x8x8 images, SGD, a single-process strategy: what the step needs, built as the run builder builds it.
struct StepRig {
  explicit StepRig(bool fp16 = false, int64_t accumulation = 1, int64_t max_bad_steps = 3,
                   OptimImplementation implementation = OptimImplementation::kAuto, OptimizerKind kind = OptimizerKind::kSgd,
                   bool graphed = false) {
    torch::manual_seed(0);
    ModelSpec spec;
    spec.arch = "mlp";
    spec.image_size = 8;
    spec.num_classes = 4;
    model = build_model(spec, 1);
    comm = single_process_communicator();
    strategy = make_strategy(StrategyKind::kSingle, *model, *comm, 25, false);
    OptimSpec optim;
    optim.lr = 0.1;
    optim.name = kind;
    optim.implementation = implementation;
    optim.momentum = 0.9;
    optimizer = build_optimizer(optim, strategy->optimizer_parameters());
    scaler = std::make_unique<LossScaler>(fp16, c10::Device(c10::kCPU));
    StepSettings settings;
    settings.accumulation = accumulation;
    settings.num_classes = 4;
    settings.max_bad_steps = max_bad_steps;
    settings.cuda_graphs = graphed;
    step = std::make_unique<TrainStep>(StepParts{*model, *task, *strategy, *optimizer, *scaler, *comm, c10::Device(c10::kCPU)}, settings);
  }
  at::Tensor weights() const {
    std::vector<at::Tensor> flat;
    for (const auto& p : model->parameters()) flat.push_back(p.detach().flatten().clone());
    return at::cat(flat);
  }
  std::shared_ptr<Classifier> model;
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<Strategy> strategy;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<LossScaler> scaler;
  std::unique_ptr<Task> task = make_task(Recipe{});  // classification: cross-entropy
  std::unique_ptr<TrainStep> step;
};

StepOutput run_step(StepRig& rig, int64_t step, const at::Tensor& images, const at::Tensor& labels) {
  QueuedBatches batches({batch_of(images, labels)});
  return rig.step->run(batches, StepInput{step, 0, 0.1, 0});
}

// Sets a test-aid variable (train/fault_injection.h) for one scope.
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  const char* name_;
};

}  // namespace

TEST_CASE("a clean step updates the weights and reports a finite loss", "[train]") {
  StepRig rig;
  const at::Tensor images = at::randn({8, 1, 8, 8}), labels = at::arange(8) % 4;
  const at::Tensor before = rig.weights();
  const StepOutput out = run_step(rig, 1, images, labels);
  CHECK(out.applied);
  CHECK_FALSE(out.loss_non_finite);
  CHECK_FALSE(out.give_up);
  CHECK_FALSE(out.stop);
  CHECK(std::isfinite(out.loss.item<double>()));
  CHECK(out.loss.item<double>() > 0.5);  // about ln 4 for an untrained 4-class model
  CHECK_FALSE(at::equal(before, rig.weights()));
}

TEST_CASE("non-finite steps are skipped with the weights untouched, and max_bad_steps in a row give up", "[train]") {
  const OptimImplementation implementation = GENERATE(OptimImplementation::kForeach, OptimImplementation::kFused);
  CAPTURE(static_cast<int>(implementation));
  StepRig rig(false, 1, 2, implementation);
  const at::Tensor images = at::randn({8, 1, 8, 8}), labels = at::arange(8) % 4;
  const ScopedEnv nan("CVTRAIN_NAN_STEPS", "2-3");
  CHECK(run_step(rig, 1, images, labels).applied);
  const at::Tensor before = rig.weights();
  const StepOutput skipped = run_step(rig, 2, images, labels);
  CHECK_FALSE(skipped.applied);
  CHECK(skipped.loss_non_finite);
  CHECK_FALSE(skipped.give_up);
  CHECK(at::equal(before, rig.weights()));
  CHECK(run_step(rig, 3, images, labels).give_up);
  CHECK(at::equal(before, rig.weights()));
}

TEST_CASE("an fp16 gradient overflow is skipped, halves the scale and never gives up", "[train]") {
  const OptimImplementation implementation = GENERATE(OptimImplementation::kForeach, OptimImplementation::kFused);
  CAPTURE(static_cast<int>(implementation));
  StepRig rig(true, 1, 1, implementation);
  const at::Tensor images = at::randn({8, 1, 8, 8}), labels = at::arange(8) % 4;
  const ScopedEnv inf("CVTRAIN_INF_GRAD_STEPS", "1-3");
  const at::Tensor before = rig.weights();
  for (int64_t step = 1; step <= 3; ++step) {
    const StepOutput out = run_step(rig, step, images, labels);
    CHECK_FALSE(out.applied);
    CHECK_FALSE(out.loss_non_finite);
    CHECK_FALSE(out.give_up);
  }
  CHECK(rig.scaler->state().scale == 65536.0 / 8);
  CHECK(at::equal(before, rig.weights()));
  CHECK(run_step(rig, 4, images, labels).applied);
}

TEST_CASE("two micro-batches of accumulation make the step one batch of both makes", "[train]") {
  const at::Tensor images = at::randn({8, 1, 8, 8}), labels = at::arange(8) % 4;
  StepRig whole;
  run_step(whole, 1, images, labels);
  StepRig halves(false, 2);
  QueuedBatches batches({batch_of(images.narrow(0, 0, 4), labels.narrow(0, 0, 4)), batch_of(images.narrow(0, 4, 4), labels.narrow(0, 4, 4))});
  const StepOutput out = halves.step->run(batches, StepInput{1, 0, 0.1, 0});
  CHECK(out.applied);
  CHECK(at::allclose(whole.weights(), halves.weights(), 1e-6, 1e-7));
}

TEST_CASE("a step that finds no batch is an error", "[train]") {
  StepRig rig;
  QueuedBatches none({});
  CHECK_THROWS_WITH(rig.step->run(none, StepInput{1, 0, 0.1, 0}), Catch::Contains("ran out of batches"));
}

// The fused path never reads the flags before the update: the kernel skips on the device flag.
// Over clean, overflowing and NaN steps it must leave what the host-decided path leaves.
TEST_CASE("steps skipped on the device leave weights, moments and loss scale as host-decided skips do", "[train]") {
  const OptimizerKind kind = GENERATE(OptimizerKind::kSgd, OptimizerKind::kAdamw);
  CAPTURE(static_cast<int>(kind));
  StepRig host(true, 1, 5, OptimImplementation::kForeach, kind), device(true, 1, 5, OptimImplementation::kFused, kind);
  const at::Tensor images = at::randn({8, 1, 8, 8}), labels = at::arange(8) % 4;
  const ScopedEnv inf("CVTRAIN_INF_GRAD_STEPS", "2-3");
  const ScopedEnv nan("CVTRAIN_NAN_STEPS", "5-5");
  for (int64_t step = 1; step <= 7; ++step) {
    const StepOutput a = run_step(host, step, images, labels), b = run_step(device, step, images, labels);
    CHECK(a.applied == b.applied);
    CHECK(a.loss_non_finite == b.loss_non_finite);
    CHECK(a.applied == (step == 1 || step == 4 || step >= 6));
  }
  CHECK(host.scaler->state().scale == 65536.0 / 8);  // the NaN step halves it too
  CHECK(device.scaler->state().scale == 65536.0 / 8);
  CHECK(at::allclose(host.weights(), device.weights(), 1e-5, 1e-6));
  // The moments and AdamW's step counts, field by field (the device's counts read back on request).
  const std::vector<at::Tensor> a = host.model->parameters(), b = device.model->parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    const StateFields fa = optimizer_state_of(*host.optimizer, a[i]), fb = optimizer_state_of(*device.optimizer, b[i]);
    REQUIRE(fa.size() == fb.size());
    for (size_t f = 0; f < fa.size(); ++f) {
      CAPTURE(i, fa[f].first);
      CHECK(fa[f].first == fb[f].first);
      CHECK(at::allclose(fa[f].second.to(at::kDouble), fb[f].second.to(at::kDouble), 1e-5, 1e-6));
    }
  }
}

// train.cuda_graphs stages the inputs, the learning rate and the host's decisions into tensors and
// runs the rest of the step from them (on CUDA captured once, replayed after). On the CPU the same
// body runs without a capture: every step must equal the eager one, skips and accumulation included.
TEST_CASE("the step a CUDA graph captures equals the eager step, with accumulation and skipped steps", "[train]") {
  const OptimizerKind kind = GENERATE(OptimizerKind::kSgd, OptimizerKind::kAdamw);
  CAPTURE(static_cast<int>(kind));
  const ScopedEnv inf("CVTRAIN_INF_GRAD_STEPS", "2-2");
  const ScopedEnv nan("CVTRAIN_NAN_STEPS", "4-4");
  StepRig eager(true, 2, 5, OptimImplementation::kFused, kind), graphed(true, 2, 5, OptimImplementation::kFused, kind, true);
  for (int64_t step = 1; step <= 6; ++step) {
    const at::Tensor images = at::randn({8, 1, 8, 8}), labels = at::randint(4, {8});
    const auto halves = [&] {
      return QueuedBatches({batch_of(images.narrow(0, 0, 4), labels.narrow(0, 0, 4)), batch_of(images.narrow(0, 4, 4), labels.narrow(0, 4, 4))});
    };
    QueuedBatches a = halves(), b = halves();
    const double lr = 0.1 / static_cast<double>(step);  // a changing rate must reach the staged tensor
    const StepOutput x = eager.step->run(a, StepInput{step, 0, lr, 0}), y = graphed.step->run(b, StepInput{step, 0, lr, 0});
    CAPTURE(step);
    CHECK(x.applied == y.applied);
    CHECK(y.applied == (step != 2 && step != 4));
    CHECK(x.loss_non_finite == y.loss_non_finite);
    if (!x.loss_non_finite) CHECK(x.loss.item<double>() == Approx(y.loss.item<double>()).epsilon(1e-6));
    CHECK(at::allclose(eager.weights(), graphed.weights(), 1e-5, 1e-6));
  }
  CHECK(eager.scaler->state().scale == graphed.scaler->state().scale);
  CHECK(graphed.scaler->state().scale == 65536.0 / 4);
}

TEST_CASE("a run says why its steps cannot be captured", "[train]") {
  CHECK_THAT(graph_refusal(GraphConditions{false, true, StrategyKind::kDdp}).value_or(""), Catch::Contains("not on a CUDA device"));
  CHECK_THAT(graph_refusal(GraphConditions{true, false, StrategyKind::kDdp}).value_or(""), Catch::Contains("optim.implementation: fused"));
  CHECK_THAT(graph_refusal(GraphConditions{true, true, StrategyKind::kFsdp}).value_or(""), Catch::Contains("fsdp"));
  for (StrategyKind kind : {StrategyKind::kSingle, StrategyKind::kDdp, StrategyKind::kZero1, StrategyKind::kZero2})
    CHECK_FALSE(graph_refusal(GraphConditions{true, true, kind}));
}
