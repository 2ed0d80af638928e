// Models: output shapes, torchvision parameter names and counts.
#include "torch_catch.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>

#include "cvtrain/core/error.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/models/flops.h"
#include "cvtrain/models/arch_traits.h"
#include "cvtrain/recipe/recipe.h"

using namespace cvtrain;

namespace {

int64_t parameter_count(torch::nn::Module& model) {
  int64_t n = 0;
  for (const auto& p : model.parameters()) n += p.numel();
  return n;
}

ModelSpec spec(const std::string& arch, int64_t classes, int64_t size, bool small_stem = false) {
  ModelSpec s;
  s.arch = arch;
  s.num_classes = classes;
  s.image_size = size;
  s.small_stem = small_stem;
  return s;
}

}  // namespace

TEST_CASE("every registered model maps images to logits", "[models]") {
  CHECK(registered_model_names() == model_names());  // the factories and the traits table list the same architectures
  for (const auto& name : model_names()) {
    auto model = build_model(spec(name, 7, 32, true), 3);
    model->eval();
    const at::Tensor logits = model->forward(at::randn({2, 3, 32, 32}));
    if (arch_traits(name)->per_pixel)
      CHECK(logits.sizes() == at::IntArrayRef({2, 7, 32, 32}));  // segmentation: logits at every input pixel
    else
      CHECK(logits.sizes() == at::IntArrayRef({2, 7}));
  }
}

TEST_CASE("small_cnn takes single-channel 28x28 images", "[models]") {
  auto model = build_model(spec("small_cnn", 10, 28), 1);
  CHECK(model->forward(at::randn({4, 1, 28, 28})).sizes() == at::IntArrayRef({4, 10}));
}

TEST_CASE("ResNets match torchvision's parameter counts and names", "[models]") {
  // torchvision.models.resnet18/34/50(num_classes=1000) parameter counts.
  CHECK(parameter_count(*build_model(spec("resnet18", 1000, 224), 3)) == 11689512);
  CHECK(parameter_count(*build_model(spec("resnet34", 1000, 224), 3)) == 21797672);
  CHECK(parameter_count(*build_model(spec("resnet101", 1000, 224), 3)) == 44549160);
  auto resnet50 = build_model(spec("resnet50", 1000, 224), 3);
  CHECK(parameter_count(*resnet50) == 25557032);
  const auto params = resnet50->named_parameters();
  const auto buffers = resnet50->named_buffers();
  for (const char* name : {"conv1.weight", "bn1.bias", "layer1.0.conv3.weight", "layer1.0.downsample.0.weight",
                           "layer4.2.bn3.weight", "fc.weight", "fc.bias"})
    CHECK(params.contains(name));
  CHECK(buffers.contains("layer2.0.downsample.1.running_var"));
  CHECK(resnet50->forward(at::randn({1, 3, 64, 64})).sizes() == at::IntArrayRef({1, 1000}));
}

TEST_CASE("DeepLabV3 and FCN match torchvision's parameter counts and names, the auxiliary head in training only", "[models]") {
  // torchvision.models.segmentation.*(num_classes=21, aux_loss=True) parameter counts.
  CHECK(parameter_count(*build_model(spec("deeplabv3_resnet101", 21, 64), 3)) == 60996202);
  CHECK(parameter_count(*build_model(spec("fcn_resnet50", 21, 64), 3)) == 35322218);
  CHECK(parameter_count(*build_model(spec("fcn_resnet101", 21, 64), 3)) == 54314346);
  auto deeplab = build_model(spec("deeplabv3_resnet50", 21, 64), 3);
  CHECK(parameter_count(*deeplab) == 42004074);
  const auto params = deeplab->named_parameters();
  for (const char* name :
       {"backbone.conv1.weight", "backbone.layer4.2.conv2.weight", "classifier.0.convs.0.0.weight", "classifier.0.convs.4.1.weight",
        "classifier.0.project.0.weight", "classifier.4.bias", "aux_classifier.4.weight"})
    CHECK(params.contains(name));
  CHECK_FALSE(params.contains("backbone.fc.weight"));
  // Output stride 8: layer4's 3x3 convolutions are dilated, 2 in its first block and 4 after.
  CHECK(deeplab->named_modules()["backbone.layer4.0.conv2"]->as<torch::nn::Conv2d>()->options.dilation()->at(0) == 2);
  CHECK(deeplab->named_modules()["backbone.layer4.1.conv2"]->as<torch::nn::Conv2d>()->options.dilation()->at(0) == 4);
  deeplab->train();
  const std::vector<at::Tensor> outputs = deeplab->forward_outputs(at::randn({2, 3, 48, 40}));
  REQUIRE(outputs.size() == 2);
  CHECK(outputs[1].sizes() == at::IntArrayRef({2, 21, 48, 40}));
  deeplab->eval();
  CHECK(deeplab->forward_outputs(at::randn({1, 3, 48, 40})).size() == 1);
}

TEST_CASE("SegFormer B0-B2 match transformers' parameter counts and the published checkpoints' names", "[models]") {
  // transformers.SegformerForSemanticSegmentation(SegformerConfig(num_labels=150, ...)) with
  // nvidia/mit-b0, -b1 and -b2's configurations: 3.75 M, 13.7 M and 27.5 M, as the paper's table.
  CHECK(parameter_count(*build_model(spec("segformer_b1", 150, 64), 3)) == 13715798);
  CHECK(parameter_count(*build_model(spec("segformer_b2", 150, 64), 3)) == 27461974);
  auto b0 = build_model(spec("segformer_b0", 150, 64), 3);
  CHECK(parameter_count(*b0) == 3752694);
  const auto params = b0->named_parameters();
  for (const char* name :
       {"segformer.encoder.patch_embeddings.0.proj.weight", "segformer.encoder.patch_embeddings.3.layer_norm.bias",
        "segformer.encoder.block.0.1.attention.self.sr.weight", "segformer.encoder.block.0.0.attention.self.layer_norm.weight",
        "segformer.encoder.block.2.1.attention.output.dense.weight", "segformer.encoder.block.3.0.mlp.dwconv.dwconv.bias",
        "segformer.encoder.layer_norm.3.weight", "decode_head.linear_c.2.proj.weight", "decode_head.linear_fuse.weight",
        "decode_head.batch_norm.weight", "decode_head.classifier.bias"})
    CHECK(params.contains(name));
  CHECK_FALSE(params.contains("segformer.encoder.block.3.0.attention.self.sr.weight"));  // the last stage attends to every token
  CHECK(b0->named_buffers().contains("decode_head.batch_norm.running_mean"));
  CHECK(b0->blocks().size() == 8);
  b0->train();
  const std::vector<at::Tensor> outputs = b0->forward_outputs(at::randn({2, 3, 72, 40}));
  REQUIRE(outputs.size() == 1);  // no auxiliary head
  CHECK(outputs[0].sizes() == at::IntArrayRef({2, 150, 72, 40}));
}

TEST_CASE("Swin-T and Swin-S match timm's parameter counts and names, with windows as timm fits them to the image", "[models]") {
  // timm.create_model('swin_tiny_patch4_window7_224') and swin_small's: 28.3 M and 49.6 M, no buffer
  // in their state_dict; at img_size=96 the maps are 24, 12, 6 and 3 wide and the last two stages'
  // windows shrink to them, and so do their bias tables ((2*6-1)^2 and (2*3-1)^2 rows).
  CHECK(parameter_count(*build_model(spec("swin_small_patch4_window7", 1000, 224), 3)) == 49606258);
  auto tiny = build_model(spec("swin_tiny_patch4_window7", 1000, 224), 3);
  CHECK(parameter_count(*tiny) == 28288354);
  CHECK(tiny->named_parameters().size() == 173);
  CHECK(tiny->named_buffers().is_empty());
  const auto params = tiny->named_parameters();
  for (const char* name : {"patch_embed.proj.weight", "patch_embed.norm.bias", "layers.1.downsample.norm.weight",
                           "layers.3.downsample.reduction.weight", "layers.2.blocks.5.mlp.fc2.bias", "norm.weight", "head.fc.weight"})
    CHECK(params.contains(name));
  CHECK(params["layers.0.blocks.1.attn.relative_position_bias_table"].sizes() == at::IntArrayRef({169, 3}));
  CHECK(tiny->blocks().size() == 12);
  auto small_image = build_model(spec("swin_tiny_patch4_window7", 10, 96), 3);
  CHECK(parameter_count(*small_image) == 28277986 - 1000 * 769 + 10 * 769);
  const auto small_params = small_image->named_parameters();
  CHECK(small_params["layers.2.blocks.5.attn.relative_position_bias_table"].sizes() == at::IntArrayRef({121, 12}));
  CHECK(small_params["layers.3.blocks.1.attn.relative_position_bias_table"].sizes() == at::IntArrayRef({25, 24}));
  small_image->train();
  CHECK(small_image->forward(at::randn({2, 3, 96, 96})).sizes() == at::IntArrayRef({2, 10}));
}

TEST_CASE("an unknown architecture is a model problem with suggestions, and no factory builds it", "[models]") {
  const auto problems = model_problems(spec("resnet51", 10, 32));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].key == "model.arch");
  CHECK_THAT(problems[0].message, Catch::Contains("did you mean 'resnet50'?"));
  CHECK_THROWS_WITH(build_model(spec("resnet51", 10, 32), 3), Catch::Contains("no factory builds 'resnet51'"));
}

TEST_CASE("forward FLOPs match the published figures", "[models]") {
  // torchvision's model cards: ResNet-18 1.81, ResNet-34 3.66, ResNet-50 4.09, ResNet-101 7.80 GMACs
  // at 224x224; timm's results tables: ConvNeXt-T 4.47, ConvNeXt-S 8.71 GMACs (convolutions and
  // linear layers; a multiply-add is 2 FLOPs here); Swin-T 4.51, Swin-S 8.77 GMACs (timm's table;
  // torch.utils.flop_counter on timm's models: 4.49 and 8.74).
  for (const auto& [arch, gmacs] : {std::pair{"resnet18", 1.81}, std::pair{"resnet34", 3.66}, std::pair{"resnet50", 4.09},
                                    std::pair{"resnet101", 7.80}, std::pair{"convnext_tiny", 4.47}, std::pair{"convnext_small", 8.71},
                                    std::pair{"swin_tiny_patch4_window7", 4.51}, std::pair{"swin_small_patch4_window7", 8.77}}) {
    auto model = build_model(spec(arch, 1000, 224), 3);
    const double flops = forward_flops_per_image(*model, 3, 224);
    INFO(arch << ": " << flops / 2e9 << " GMACs");
    CHECK(flops / 2e9 == Approx(gmacs).epsilon(0.01));
  }
  // The MLP by hand: 784 -> 256 -> 10; counting leaves the model in the mode it was in.
  auto mlp = build_model(spec("mlp", 10, 28), 1);
  CHECK(forward_flops_per_image(*mlp, 1, 28) == 2.0 * (784 * 256 + 256 * 10));
  CHECK(mlp->is_training());
}

TEST_CASE("ViTs match timm's parameter counts, names and FLOPs", "[models]") {
  // timm.create_model('vit_{tiny,small,base}_patch16_224').num_parameters, 1000 classes.
  CHECK(parameter_count(*build_model(spec("vit_tiny_patch16", 1000, 224), 3)) == 5717416);
  CHECK(parameter_count(*build_model(spec("vit_small_patch16", 1000, 224), 3)) == 22050664);
  auto base = build_model(spec("vit_base_patch16", 1000, 224), 3);
  CHECK(parameter_count(*base) == 86567656);
  const auto params = base->named_parameters();
  for (const char* name : {"cls_token", "pos_embed", "patch_embed.proj.weight", "blocks.0.norm1.weight", "blocks.11.attn.qkv.weight",
                           "blocks.11.attn.proj.bias", "blocks.5.mlp.fc1.weight", "blocks.5.mlp.fc2.bias", "norm.bias", "head.weight"})
    CHECK(params.contains(name));
  CHECK(params["pos_embed"].sizes() == at::IntArrayRef({1, 197, 768}));
  // ViT-B/16 at 224: 17.56 GMACs (the usual "17.6 GFLOPs" counts multiply-adds).
  CHECK(forward_flops_per_image(*base, 3, 224) / 2e9 == Approx(17.56).epsilon(0.01));
  const auto problems = model_problems(spec("vit_base_patch16", 10, 28));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].key == "model.image_size");
  CHECK_THAT(problems[0].message, Catch::StartsWith("28 is not a multiple of the patch size 16"));
}

TEST_CASE("ConvNeXts match timm's parameter counts and names", "[models]") {
  // timm.create_model('convnext_tiny' / 'convnext_small').num_parameters, 1000 classes.
  auto tiny = build_model(spec("convnext_tiny", 1000, 224), 3);
  CHECK(parameter_count(*tiny) == 28589128);
  CHECK(parameter_count(*build_model(spec("convnext_small", 1000, 224), 3)) == 50223688);
  const auto params = tiny->named_parameters();
  for (const char* name : {"stem.0.weight", "stem.1.bias", "stages.0.blocks.0.gamma", "stages.0.blocks.2.conv_dw.weight",
                           "stages.1.downsample.0.weight", "stages.1.downsample.1.bias", "stages.2.blocks.8.mlp.fc1.weight",
                           "stages.3.blocks.2.norm.bias", "head.norm.weight", "head.fc.weight"})
    CHECK(params.contains(name));
  CHECK(tiny->named_buffers().is_empty());
  CHECK(tiny->is_convolutional());
}

TEST_CASE("ResNet drop-path: no parameters of its own, nothing in evaluation, whole branches dropped in training", "[models]") {
  ModelSpec dropping = spec("resnet18", 5, 32, true);
  dropping.drop_path = 0.5;
  torch::manual_seed(3);
  auto plain = build_model(spec("resnet18", 5, 32, true), 3);
  torch::manual_seed(3);
  auto with_drop = build_model(dropping, 3);
  const auto a = plain->parameters(), b = with_drop->parameters();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) REQUIRE(at::equal(a[i], b[i]));
  const at::Tensor images = at::randn({4, 3, 32, 32});
  plain->eval();
  with_drop->eval();
  CHECK(at::equal(plain->forward(images), with_drop->forward(images)));
  plain->train();
  with_drop->train();
  CHECK_FALSE(at::allclose(plain->forward(images), with_drop->forward(images)));
}
