// Optimizer construction: decay groups, learning-rate updates, and one SGD-Nesterov step by hand.
#include "torch_catch.h"

#include <ATen/ATen.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/optimizer.h>
#include <torch/optim/sgd.h>

#include "cvtrain/optim/optimizer.h"
#include "cvtrain/recipe/recipe.h"

using namespace cvtrain;

namespace {

struct Net : torch::nn::Module {
  Net() {
    fc = register_module("fc", torch::nn::Linear(3, 2));
    bn = register_module("bn", torch::nn::BatchNorm1d(2));
    pos_embed = register_parameter("pos_embed", at::zeros({1, 5, 2}));  // as ViT names it
  }
  torch::nn::Linear fc{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
  at::Tensor pos_embed;
};

}  // namespace

TEST_CASE("weight decay applies to weight matrices only, not to position embeddings", "[optim]") {
  Net net;
  OptimSpec spec;
  spec.weight_decay = 0.05;
  for (const OptimizerKind name : {OptimizerKind::kSgd, OptimizerKind::kAdamw, OptimizerKind::kLamb, OptimizerKind::kLars}) {
    spec.name = name;
    auto optimizer = build_optimizer(spec, net);
    auto& groups = optimizer->param_groups();
    REQUIRE(groups.size() == 2);
    REQUIRE(groups[0].params().size() == 1);  // fc.weight
    CHECK(groups[0].params()[0].is_same(net.fc->weight));
    CHECK(groups[1].params().size() == 4);    // fc.bias, bn.weight, bn.bias, pos_embed
    set_learning_rate(*optimizer, 0.25);
    for (auto& g : groups) CHECK(g.options().get_lr() == Approx(0.25));
  }
}

TEST_CASE("SGD with Nesterov momentum takes the textbook first step", "[optim]") {
  Net net;
  OptimSpec spec;
  spec.name = OptimizerKind::kSgd;
  spec.lr = 0.1;
  spec.momentum = 0.9;
  spec.nesterov = true;
  auto optimizer = build_optimizer(spec, net);
  const at::Tensor before = net.fc->weight.detach().clone();
  net.fc->weight.mutable_grad() = at::ones_like(before);
  optimizer->step();
  // buf = g; update = g + momentum * buf = 1.9 g
  CHECK(at::allclose(net.fc->weight.detach(), before - 0.1 * 1.9));
}

TEST_CASE("LAMB and LARS state goes through the named fields checkpoints store, and resumes the same steps", "[optim]") {
  for (const OptimizerKind name : {OptimizerKind::kLamb, OptimizerKind::kLars}) {
    OptimSpec spec;
    spec.name = name;
    spec.lr = 0.01;
    spec.weight_decay = 0.01;
    Net a, b;
    {
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < a.parameters().size(); ++i) b.parameters()[i].copy_(a.parameters()[i]);
    }
    auto first = build_optimizer(spec, a);
    const auto step = [](Net& net, torch::optim::Optimizer& optimizer, double scale) {
      for (auto& p : net.parameters()) p.mutable_grad() = at::full_like(p, scale);
      optimizer.step();
    };
    step(a, *first, 0.3);
    // b takes a's weights and optimizer state by fields, then both take the same second step.
    auto second = build_optimizer(spec, b);
    {
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < a.parameters().size(); ++i) {
        b.parameters()[i].copy_(a.parameters()[i]);
        set_optimizer_state(*second, b.parameters()[i], optimizer_state_of(*first, a.parameters()[i]));
      }
    }
    CHECK_FALSE(optimizer_state_of(*first, a.fc->weight).empty());
    step(a, *first, -0.2);
    step(b, *second, -0.2);
    for (size_t i = 0; i < a.parameters().size(); ++i) CHECK(a.parameters()[i].equal(b.parameters()[i]));
  }
}

TEST_CASE("layer decay: one group per scale, and the schedule's rate times each group's scale", "[optim]") {
  Net net;
  ParameterGroups groups = parameter_groups(net);
  groups.decay_scales.assign(groups.decay.size(), 0.25);
  groups.no_decay_scales = {1.0, 0.5, 0.5, 0.25};  // fc.bias, bn.weight, bn.bias, pos_embed
  REQUIRE(groups.no_decay.size() == 4);
  for (const OptimizerKind name : {OptimizerKind::kSgd, OptimizerKind::kAdamw, OptimizerKind::kLamb, OptimizerKind::kLars}) {
    OptimSpec spec;
    spec.name = name;
    spec.weight_decay = 0.05;
    auto optimizer = build_optimizer(spec, groups);
    auto& made = optimizer->param_groups();
    REQUIRE(made.size() == 4);  // decay x {0.25}, no decay x {1, 0.5, 0.25}
    set_learning_rate(*optimizer, 0.2);
    std::vector<double> rates;
    size_t tensors = 0;
    for (auto& g : made) {
      rates.push_back(g.options().get_lr());
      tensors += g.params().size();
    }
    CHECK(tensors == 5);
    CHECK(rates[0] == Approx(0.05));
    CHECK(rates[1] == Approx(0.2));
    CHECK(rates[2] == Approx(0.1));
    CHECK(rates[3] == Approx(0.05));
  }
}
