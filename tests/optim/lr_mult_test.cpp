// optim.lr_mult: multipliers by parameter name, chosen as mmengine chooses among custom_keys.
#include <catch2/catch.hpp>

#include "cvtrain/optim/lr_mult.h"

using namespace cvtrain;

TEST_CASE("lr_mult takes the longest key a name contains, the first by name among keys as long, 1 for none", "[optim]") {
  const std::vector<std::string> names{"backbone.layer1.0.conv1.weight", "classifier.4.weight", "aux_classifier.4.bias",
                                       "decode_head.linear_fuse.weight", "backbone.block1.0.attn.norm.weight"};
  const std::map<std::string, double> mult{{"classifier", 10}, {"aux_classifier", 5}, {"head", 10}, {"norm", 0.5}, {"attn", 2}};
  const std::vector<double> scales = lr_mult_scales(names, mult);
  CHECK(scales == std::vector<double>{1.0, 10.0, 5.0, 10.0, 2.0});  // "attn" before "norm": as long, first by name
  CHECK(lr_mult_scales(names, {}) == std::vector<double>(5, 1.0));
}
