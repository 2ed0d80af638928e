// model.grad_checkpointing: the recomputed backward gives the plain backward's gradients, leaves
// BatchNorm's running averages and the random-number stream as they would be without it.
#include "torch_catch.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include "cvtrain/models/classifier.h"
#include "cvtrain/recipe/recipe.h"

using namespace cvtrain;

namespace {

struct BackwardResult {
  at::Tensor logits, input_grad, next_random;
  std::vector<std::pair<std::string, at::Tensor>> grads, buffers;
};

// Same seed, same weights, same batch; one training forward and backward.
BackwardResult train_step(ModelSpec spec, bool checkpointing, int64_t image_size) {
  spec.grad_checkpointing = checkpointing;
  at::manual_seed(7);
  auto model = build_model(spec, 3);
  model->train();
  const at::Tensor images = at::randn({4, 3, image_size, image_size}).requires_grad_(true);
  BackwardResult result;
  result.logits = model->forward(images);
  (result.logits * at::linspace(-1, 1, result.logits.numel()).view_as(result.logits)).sum().backward();
  result.input_grad = images.grad();
  result.next_random = at::rand({4});  // the generator must have advanced exactly as without checkpointing
  for (const auto& p : model->named_parameters()) result.grads.emplace_back(p.key(), p.value().grad());
  for (const auto& b : model->named_buffers()) result.buffers.emplace_back(b.key(), b.value().clone());
  return result;
}

void check_same(const BackwardResult& plain, const BackwardResult& recomputed) {
  CHECK(at::equal(plain.logits, recomputed.logits));
  CHECK(at::allclose(plain.input_grad, recomputed.input_grad, 1e-5, 1e-6));
  CHECK(at::equal(plain.next_random, recomputed.next_random));
  REQUIRE(plain.grads.size() == recomputed.grads.size());
  for (size_t i = 0; i < plain.grads.size(); ++i) {
    INFO(plain.grads[i].first);
    REQUIRE(recomputed.grads[i].second.defined());
    CHECK(at::allclose(plain.grads[i].second, recomputed.grads[i].second, 1e-5, 1e-6));
  }
  REQUIRE(plain.buffers.size() == recomputed.buffers.size());
  for (size_t i = 0; i < plain.buffers.size(); ++i) {
    INFO(plain.buffers[i].first);
    CHECK(at::equal(plain.buffers[i].second, recomputed.buffers[i].second));
  }
}

ModelSpec spec(const std::string& arch, int64_t image_size, double drop_path = 0) {
  ModelSpec s;
  s.arch = arch;
  s.num_classes = 5;
  s.image_size = image_size;
  s.drop_path = drop_path;
  return s;
}

}  // namespace

TEST_CASE("checkpointed ResNet blocks give the plain gradients and count BatchNorm once", "[models]") {
  const BackwardResult plain = train_step(spec("resnet18", 32), false, 32);
  const BackwardResult recomputed = train_step(spec("resnet18", 32), true, 32);
  check_same(plain, recomputed);
  // A second update of the running averages in the replay would show here.
  for (const auto& [name, buffer] : recomputed.buffers)
    if (name.find("num_batches_tracked") != std::string::npos) CHECK(buffer.item<int64_t>() == 1);
}

TEST_CASE("checkpointed ResNet blocks with drop-path replay the same random masks", "[models]") {
  check_same(train_step(spec("resnet18", 32, 0.5), false, 32), train_step(spec("resnet18", 32, 0.5), true, 32));
}

TEST_CASE("checkpointed ViT blocks with drop-path replay the same random masks", "[models]") {
  check_same(train_step(spec("vit_tiny_patch16", 32, 0.5), false, 32), train_step(spec("vit_tiny_patch16", 32, 0.5), true, 32));
}

TEST_CASE("checkpointed ConvNeXt blocks give the plain gradients", "[models]") {
  check_same(train_step(spec("convnext_tiny", 64, 0.3), false, 64), train_step(spec("convnext_tiny", 64, 0.3), true, 64));
}

TEST_CASE("checkpointing is inert without gradients", "[models]") {
  ModelSpec s = spec("resnet18", 32);
  s.grad_checkpointing = true;
  auto model = build_model(s, 3);
  model->eval();
  torch::NoGradGuard no_grad;
  const at::Tensor logits = model->forward(at::randn({2, 3, 32, 32}));
  CHECK(logits.sizes() == at::IntArrayRef({2, 5}));
  CHECK_FALSE(logits.requires_grad());
}
