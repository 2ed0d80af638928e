// Layer-wise learning-rate decay: timm's grouping of parameter names into layers, by hand.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "cvtrain/core/error.h"
#include "cvtrain/optim/layer_decay.h"

using namespace cvtrain;

TEST_CASE("ViT: the stem least, each block one step more, the final norm with the last block, the head full", "[optim]") {
  std::vector<std::string> names{"cls_token", "pos_embed", "patch_embed.proj.weight"};
  for (int b = 0; b < 12; ++b) names.push_back("blocks." + std::to_string(b) + ".attn.qkv.weight");
  names.insert(names.end(), {"norm.weight", "head.weight", "head.bias"});
  const std::vector<double> s = layer_decay_scales(names, "vit_base_patch16", 0.5);
  CHECK(s[0] == Approx(std::pow(0.5, 13)));
  CHECK(s[2] == s[0]);
  CHECK(s[3] == Approx(std::pow(0.5, 12)));   // blocks.0
  CHECK(s[14] == Approx(0.5));                 // blocks.11
  CHECK(s[15] == Approx(0.5));                 // norm joins the group before it (timm's 99999)
  CHECK(s[16] == 1.0);                         // the head
  CHECK(s[17] == 1.0);
}

TEST_CASE("ConvNeXt and ResNet: blocks in stage order, a downsample with its stage's first block", "[optim]") {
  const std::vector<double> c = layer_decay_scales(
      {"stem.0.weight", "stages.0.blocks.0.gamma", "stages.0.blocks.1.gamma", "stages.1.downsample.1.weight", "stages.1.blocks.0.gamma",
       "head.fc.weight"},
      "convnext_tiny", 0.5);
  CHECK(c == std::vector<double>{1.0 / 16, 1.0 / 8, 1.0 / 4, 1.0 / 2, 1.0 / 2, 1.0});
  const std::vector<double> r = layer_decay_scales({"conv1.weight", "bn1.weight", "layer1.0.conv1.weight", "layer2.0.bn1.bias", "fc.weight"},
                                                   "resnet50", 0.5);
  CHECK(r == std::vector<double>{1.0 / 8, 1.0 / 8, 1.0 / 4, 1.0 / 2, 1.0});
  CHECK_THROWS_AS(layer_decay_scales({"fc.weight"}, "small_cnn", 0.5), Error);
}
