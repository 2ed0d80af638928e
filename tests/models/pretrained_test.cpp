// Pretrained weights by name: exact copy, new head for another class count, ViT position
// embedding interpolated to another grid, strictness about missing and unexpected keys.
#include "torch_catch.h"

#include <ATen/ATen.h>

#include "cvtrain/core/error.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/models/pretrained.h"
#include "cvtrain/models/safetensors.h"
#include "cvtrain/recipe/recipe.h"
#include "temp_dir.h"

using namespace cvtrain;
using cvtrain::testing::TempDir;

namespace {

std::shared_ptr<Classifier> make(const std::string& arch, int64_t classes, int64_t size) {
  ModelSpec spec;
  spec.arch = arch;
  spec.num_classes = classes;
  spec.image_size = size;
  return build_model(spec, 3);
}

NamedTensors state(Classifier& model) {
  NamedTensors out;
  for (const auto& item : model.named_parameters(true)) out.emplace_back(item.key(), item.value().detach());
  for (const auto& item : model.named_buffers(true)) out.emplace_back(item.key(), item.value());
  return out;
}

at::Tensor find(const NamedTensors& tensors, const std::string& name) {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  return at::Tensor();
}

}  // namespace

TEST_CASE("pretrained ResNet weights load by name and a new head is initialised for other classes", "[models]") {
  TempDir dir;
  auto source = make("resnet18", 10, 32);
  write_safetensors(dir.file("r18.safetensors"), state(*source));
  auto same = make("resnet18", 10, 32);
  const PretrainedReport exact = load_pretrained(*same, dir.file("r18.safetensors"), true);
  CHECK(exact.missing.empty());
  CHECK(exact.reinitialised.empty());
  for (const auto& [name, tensor] : state(*same)) CHECK(at::equal(tensor, find(state(*source), name)));

  auto five = make("resnet18", 5, 32);
  const at::Tensor fresh_head = five->named_parameters()["fc.weight"].clone();
  const PretrainedReport other = load_pretrained(*five, dir.file("r18.safetensors"), true);
  CHECK(other.reinitialised == std::vector<std::string>{"fc.weight", "fc.bias"});
  CHECK(at::equal(five->named_parameters()["fc.weight"], fresh_head));
  CHECK(at::equal(five->named_parameters()["layer4.1.conv2.weight"], source->named_parameters()["layer4.1.conv2.weight"]));
}

TEST_CASE("cvtrain's own small_cnn and mlp take a new head too: their last Linear", "[models]") {
  TempDir dir;
  for (const char* arch : {"small_cnn", "mlp"}) {
    auto source = make(arch, 10, 28);
    write_safetensors(dir.file("ten.safetensors"), state(*source));
    auto twelve = make(arch, 12, 28);
    const PretrainedReport report = load_pretrained(*twelve, dir.file("ten.safetensors"), true);
    INFO(arch);
    REQUIRE(report.reinitialised.size() == 2);
    const std::string head = report.reinitialised[0].substr(0, report.reinitialised[0].rfind('.'));
    CHECK(report.reinitialised == std::vector<std::string>{head + ".weight", head + ".bias"});
    CHECK(twelve->named_parameters()[head + ".weight"].size(0) == 12);
    const std::string first = state(*twelve).front().first;
    CHECK(at::equal(twelve->named_parameters()[first], source->named_parameters()[first]));
  }
}

TEST_CASE("pretrained ConvNeXt weights keep the head's norm and re-initialise only its classifier", "[models]") {
  TempDir dir;
  auto source = make("convnext_tiny", 1000, 64);
  {
    torch::NoGradGuard no_grad;  // values a fresh model would not have, so copying them shows
    source->named_parameters()["head.norm.weight"].fill_(2.0);
    source->named_parameters()["stages.2.blocks.8.gamma"].fill_(0.5);
  }
  write_safetensors(dir.file("convnext.safetensors"), state(*source));
  auto ten = make("convnext_tiny", 10, 64);
  const at::Tensor fresh_fc = ten->named_parameters()["head.fc.weight"].clone();
  const PretrainedReport report = load_pretrained(*ten, dir.file("convnext.safetensors"), /*strict=*/true);
  CHECK(report.reinitialised == std::vector<std::string>{"head.fc.weight", "head.fc.bias"});
  CHECK(at::equal(ten->named_parameters()["head.fc.weight"], fresh_fc));
  for (const char* name : {"head.norm.weight", "stages.2.blocks.8.gamma", "stem.0.weight"})
    CHECK(at::equal(ten->named_parameters()[name], source->named_parameters()[name]));
}

TEST_CASE("a ViT position embedding is interpolated to the new image size", "[models]") {
  TempDir dir;
  auto small = make("vit_tiny_patch16", 10, 32);  // 2x2 patches
  write_safetensors(dir.file("vit.safetensors"), state(*small));
  auto large = make("vit_tiny_patch16", 10, 64);  // 4x4 patches
  const PretrainedReport report = load_pretrained(*large, dir.file("vit.safetensors"), true);
  CHECK(report.position_embedding_resized);
  const at::Tensor source = small->named_parameters()["pos_embed"], loaded = large->named_parameters()["pos_embed"];
  CHECK(loaded.sizes() == at::IntArrayRef({1, 17, 192}));
  CHECK(at::equal(loaded.select(1, 0), source.select(1, 0)));  // the class token's row is kept
  // A constant grid stays constant under interpolation: check the mean moves little.
  CHECK(loaded.narrow(1, 1, 16).mean().item<double>() == Approx(source.narrow(1, 1, 4).mean().item<double>()).margin(0.01));
  CHECK(large->forward(at::randn({1, 3, 64, 64})).sizes() == at::IntArrayRef({1, 10}));
}

TEST_CASE("missing and unexpected keys are listed and an error unless strict is off", "[models]") {
  TempDir dir;
  auto source = make("resnet18", 10, 32);
  NamedTensors tensors;
  for (auto& [name, tensor] : state(*source))
    if (name != "layer1.0.conv1.weight") tensors.emplace_back(name, tensor);
  tensors.emplace_back("extra.weight", at::zeros({2}));
  write_safetensors(dir.file("odd.safetensors"), tensors);
  auto model = make("resnet18", 10, 32);
  CHECK_THROWS_WITH(load_pretrained(*model, dir.file("odd.safetensors"), true),
                    Catch::Contains("missing: layer1.0.conv1.weight") && Catch::Contains("unexpected: extra.weight") &&
                        Catch::Contains("model.pretrained_strict"));
  const PretrainedReport relaxed = load_pretrained(*model, dir.file("odd.safetensors"), false);
  CHECK(relaxed.missing == std::vector<std::string>{"layer1.0.conv1.weight"});
  CHECK(relaxed.unexpected == std::vector<std::string>{"extra.weight"});
  // Another architecture misses hundreds: the first eight are named, and the count of the rest.
  auto deeper = make("resnet34", 10, 32);
  CHECK_THROWS_WITH(load_pretrained(*deeper, dir.file("odd.safetensors"), true),
                    Catch::Contains("missing: layer1.0.conv1.weight, ") && Catch::Matches(".*, and [0-9]+ more; unexpected: extra.weight.*"));
  // A shape that cannot be adapted is an error naming the key.
  write_safetensors(dir.file("wrong.safetensors"), {{"conv1.weight", at::zeros({3, 3})}});
  CHECK_THROWS_WITH(load_pretrained(*model, dir.file("wrong.safetensors"), false), Catch::Contains("'conv1.weight' has shape [3, 3]"));
}

TEST_CASE("a segmentation model takes its encoder's ImageNet weights: torchvision's ResNet under backbone., transformers' MiT",
          "[models]") {
  TempDir dir;
  auto resnet = make("resnet18", 1000, 64);  // torchvision's layout: conv1.weight ... fc.bias
  write_safetensors(dir.file("resnet18.safetensors"), state(*resnet));
  auto deeplab = make("deeplabv3_resnet18", 5, 64);
  const PretrainedReport report = load_pretrained(*deeplab, dir.file("resnet18.safetensors"), /*strict=*/true);
  CHECK(report.encoder_only);
  CHECK(report.missing.empty());
  CHECK(report.unexpected.empty());
  CHECK(report.dropped_head == std::vector<std::string>{"backbone.fc.bias", "backbone.fc.weight"});
  REQUIRE_FALSE(report.decoder.empty());
  for (const auto& name : report.decoder) CHECK((name.rfind("classifier.", 0) == 0 || name.rfind("aux_classifier.", 0) == 0));
  CHECK(at::equal(deeplab->named_parameters()["backbone.layer4.1.conv2.weight"], resnet->named_parameters()["layer4.1.conv2.weight"]));
  CHECK(at::equal(deeplab->named_buffers()["backbone.bn1.running_var"], resnet->named_buffers()["bn1.running_var"]));

  // A backbone file without one of the encoder's tensors is still refused under strict.
  NamedTensors partial;
  for (auto& [name, tensor] : state(*resnet))
    if (name != "layer2.0.conv1.weight") partial.emplace_back(name, tensor);
  write_safetensors(dir.file("partial.safetensors"), partial);
  CHECK_THROWS_WITH(load_pretrained(*make("deeplabv3_resnet18", 5, 64), dir.file("partial.safetensors"), true),
                    Catch::Contains("backbone.layer2.0.conv1.weight"));

  // transformers' nvidia/mit-b0 file: segformer.encoder.* and an ImageNet classifier.
  auto source = make("segformer_b0", 5, 64);
  NamedTensors mit{{"classifier.weight", at::zeros({1000, 256})}, {"classifier.bias", at::zeros({1000})}};
  for (auto& [name, tensor] : state(*source))
    if (name.rfind("segformer.", 0) == 0) mit.emplace_back(name, tensor);
  write_safetensors(dir.file("mit_b0.safetensors"), mit);
  auto segformer = make("segformer_b0", 150, 64);
  const PretrainedReport mit_report = load_pretrained(*segformer, dir.file("mit_b0.safetensors"), true);
  CHECK(mit_report.encoder_only);
  CHECK(mit_report.dropped_head == std::vector<std::string>{"classifier.bias", "classifier.weight"});
  for (const auto& name : mit_report.decoder) CHECK(name.rfind("decode_head.", 0) == 0);
  CHECK(at::equal(segformer->named_parameters()["segformer.encoder.block.3.1.mlp.dwconv.dwconv.weight"],
                  source->named_parameters()["segformer.encoder.block.3.1.mlp.dwconv.dwconv.weight"]));

  // A whole segmentation model's file is no encoder file.
  write_safetensors(dir.file("deeplab.safetensors"), state(*deeplab));
  CHECK_FALSE(load_pretrained(*make("deeplabv3_resnet18", 5, 64), dir.file("deeplab.safetensors"), true).encoder_only);
}
