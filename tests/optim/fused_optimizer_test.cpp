// optim.implementation: fused against the multi-tensor path: the same parameters and state within
// float rounding over many steps with a changing learning rate, fp16's loss scale taken inside the
// kernel, a step skipped on the device for an overflow, and state moved between the two.
#include "torch_catch.h"

#include <ATen/ATen.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/optimizer.h>

#include "cvtrain/optim/optimizer.h"
#include "cvtrain/recipe/recipe.h"

using namespace cvtrain;

namespace {

struct TwoLayerNet : torch::nn::Module {
  TwoLayerNet() {
    fc1 = register_module("fc1", torch::nn::Linear(16, 32));
    bn = register_module("bn", torch::nn::BatchNorm1d(32));
    fc2 = register_module("fc2", torch::nn::Linear(32, 5));
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
};

OptimSpec spec_of(OptimizerKind name, OptimImplementation implementation) {
  OptimSpec spec;
  spec.name = name;
  spec.implementation = implementation;
  spec.lr = name == OptimizerKind::kSgd ? 0.1 : 1e-2;
  spec.momentum = 0.9;
  spec.nesterov = true;
  spec.weight_decay = 0.05;
  return spec;
}

// Two nets with the same weights, an optimizer of each implementation over them.
struct Pair {
  TwoLayerNet foreach_net, fused_net;
  std::unique_ptr<torch::optim::Optimizer> foreach_opt, fused_opt;
  explicit Pair(OptimizerKind name) {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < foreach_net.parameters().size(); ++i) fused_net.parameters()[i].copy_(foreach_net.parameters()[i]);
    foreach_opt = build_optimizer(spec_of(name, OptimImplementation::kForeach), foreach_net);
    fused_opt = build_optimizer(spec_of(name, OptimImplementation::kFused), fused_net);
  }
  // The same gradients for both (`fused_scale` times larger for the fused side), then a step each.
  void step(int64_t seed, double lr, double fused_scale = 1) {
    auto generator = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed));
    for (size_t i = 0; i < foreach_net.parameters().size(); ++i) {
      const at::Tensor g = at::randn(foreach_net.parameters()[i].sizes(), generator);
      foreach_net.parameters()[i].mutable_grad() = g.clone();
      fused_net.parameters()[i].mutable_grad() = g * fused_scale;
    }
    set_learning_rate(*foreach_opt, lr);
    set_learning_rate(*fused_opt, lr);
    foreach_opt->step();
    fused_opt->step();
  }
  double parameter_difference() {
    double worst = 0;
    for (size_t i = 0; i < foreach_net.parameters().size(); ++i)
      worst = std::max(worst, (foreach_net.parameters()[i] - fused_net.parameters()[i]).abs().max().item<double>());
    return worst;
  }
};

double state_difference(torch::optim::Optimizer& a, torch::nn::Module& net_a, torch::optim::Optimizer& b, torch::nn::Module& net_b) {
  double worst = 0;
  for (size_t i = 0; i < net_a.parameters().size(); ++i) {
    const StateFields fa = optimizer_state_of(a, net_a.parameters()[i]), fb = optimizer_state_of(b, net_b.parameters()[i]);
    REQUIRE(fa.size() == fb.size());
    for (size_t k = 0; k < fa.size(); ++k) {
      REQUIRE(fa[k].first == fb[k].first);
      worst = std::max(worst, (fa[k].second.to(at::kDouble) - fb[k].second.to(at::kDouble)).abs().max().item<double>());
    }
  }
  return worst;
}

}  // namespace

TEST_CASE("fused SGD and AdamW equal the multi-tensor path within float rounding over 30 steps", "[optim]") {
  for (const OptimizerKind name : {OptimizerKind::kSgd, OptimizerKind::kAdamw}) {
    INFO(name_of(name));
    Pair pair(name);
    const at::Tensor start = pair.fused_net.fc1->weight.detach().clone();
    for (int64_t s = 0; s < 30; ++s) pair.step(s, spec_of(name, OptimImplementation::kForeach).lr * (1.0 - s / 40.0));
    CHECK((pair.fused_net.fc1->weight - start).abs().max().item<double>() > 0.01);  // they did move
    CHECK(pair.parameter_difference() < 1e-5);
    CHECK(state_difference(*pair.foreach_opt, pair.foreach_net, *pair.fused_opt, pair.fused_net) < 1e-5);
  }
}

TEST_CASE("fused optimizers unscale fp16 gradients in the kernel and skip a step found_inf marks, on the device", "[optim]") {
  for (const OptimizerKind name : {OptimizerKind::kSgd, OptimizerKind::kAdamw}) {
    INFO(name_of(name));
    Pair pair(name);
    auto* scaled = dynamic_cast<DeviceGradScaling*>(pair.fused_opt.get());
    REQUIRE(scaled);
    const at::Tensor scale = at::full({}, 1024.0), clean = at::zeros({}), overflow = at::ones({});
    for (int64_t s = 0; s < 5; ++s) {
      scaled->scale_next_step(scale, clean);
      pair.step(s, 0.05, 1024.0);
    }
    CHECK(pair.parameter_difference() < 1e-5);
    // An overflowed step: the multi-tensor side does not step at all; the fused one is told so only
    // through found_inf, which no host code reads.
    std::vector<at::Tensor> before;
    for (const at::Tensor& p : pair.fused_net.parameters()) before.push_back(p.detach().clone());
    const StateFields state_before = optimizer_state_of(*pair.fused_opt, pair.fused_net.fc1->weight);
    std::vector<at::Tensor> state_copy;
    for (const auto& [field, value] : state_before) state_copy.push_back(value.clone());
    for (const at::Tensor& p : pair.fused_net.parameters()) p.mutable_grad() = at::full_like(p, 1e4);
    scaled->scale_next_step(scale, overflow);
    pair.fused_opt->step();
    for (size_t i = 0; i < before.size(); ++i) CHECK(at::equal(before[i], pair.fused_net.parameters()[i].detach()));
    const StateFields state_after = optimizer_state_of(*pair.fused_opt, pair.fused_net.fc1->weight);  // host steps refreshed
    REQUIRE(state_after.size() == state_copy.size());
    for (size_t k = 0; k < state_copy.size(); ++k) CHECK(at::equal(state_copy[k], state_after[k].second));
    // And the runs go on together.
    for (int64_t s = 5; s < 10; ++s) {
      scaled->scale_next_step(scale, clean);
      pair.step(s, 0.05, 1024.0);
    }
    CHECK(pair.parameter_difference() < 1e-5);
    CHECK(state_difference(*pair.foreach_opt, pair.foreach_net, *pair.fused_opt, pair.fused_net) < 1e-4);
  }
}

TEST_CASE("a foreach optimizer's state continues under the fused one, as a checkpoint moves it", "[optim]") {
  for (const OptimizerKind name : {OptimizerKind::kSgd, OptimizerKind::kAdamw}) {
    INFO(name_of(name));
    Pair pair(name);
    for (int64_t s = 0; s < 4; ++s) pair.step(s, 0.02);
    // The fused side restarts from the foreach side's weights and state.
    TwoLayerNet restarted;
    {
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < restarted.parameters().size(); ++i) restarted.parameters()[i].copy_(pair.foreach_net.parameters()[i]);
    }
    auto fused = build_optimizer(spec_of(name, OptimImplementation::kFused), restarted);
    for (size_t i = 0; i < restarted.parameters().size(); ++i)
      set_optimizer_state(*fused, restarted.parameters()[i], optimizer_state_of(*pair.foreach_opt, pair.foreach_net.parameters()[i]));
    for (int64_t s = 4; s < 8; ++s) {
      auto generator = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(s));
      for (size_t i = 0; i < restarted.parameters().size(); ++i) {
        const at::Tensor g = at::randn(restarted.parameters()[i].sizes(), generator);
        pair.foreach_net.parameters()[i].mutable_grad() = g.clone();
        restarted.parameters()[i].mutable_grad() = g.clone();
      }
      set_learning_rate(*pair.foreach_opt, 0.02);
      set_learning_rate(*fused, 0.02);
      pair.foreach_opt->step();
      fused->step();
    }
    double worst = 0;
    for (size_t i = 0; i < restarted.parameters().size(); ++i)
      worst = std::max(worst, (restarted.parameters()[i] - pair.foreach_net.parameters()[i]).abs().max().item<double>());
    CHECK(worst < 1e-5);
    CHECK(state_difference(*pair.foreach_opt, pair.foreach_net, *fused, restarted) < 1e-5);
  }
}
