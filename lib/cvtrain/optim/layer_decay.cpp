// timm's group_with_matcher: each (pattern, ordinal prefix, suffix) makes a sort key from the
// pattern's numbers, unmatched names (the head) sort last, keys ending in 99999 join the group
// before them, and the sorted keys become layer ids.
#include "cvtrain/optim/layer_decay.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <regex>

#include "cvtrain/core/error.h"

namespace cvtrain {
namespace {

constexpr double kMatchPreviousGroup = 99999;  // timm's MATCH_PREV_GROUP

struct Rule {
  std::regex pattern;
  double ordinal;                     // the group's place in timm's matcher dict (stem 0, blocks 1)
  std::optional<double> suffix;
};

std::vector<Rule> rules_for(const std::string& arch) {
  if (arch.rfind("vit", 0) == 0)
    return {{std::regex("cls_token|reg_token|pos_embed|patch_embed|norm_pre"), 0, std::nullopt},
            {std::regex(R"(blocks\.(\d+))"), 1, std::nullopt},
            {std::regex("norm"), 1, kMatchPreviousGroup}};
  if (arch.rfind("convnext", 0) == 0)
    return {{std::regex("stem"), 0, std::nullopt},
            {std::regex(R"(stages\.(\d+)\.downsample)"), 1, 0.0},
            {std::regex(R"(stages\.(\d+)\.blocks\.(\d+))"), 1, std::nullopt},
            {std::regex("norm_pre"), 1, kMatchPreviousGroup}};
  if (arch.rfind("resnet", 0) == 0)
    return {{std::regex("conv1|bn1|maxpool"), 0, std::nullopt}, {std::regex(R"(layer(\d+)\.(\d+))"), 1, std::nullopt}};
  return {};
}

// The sort key of one name: the first rule that matches at its start (Python's re.match).
std::vector<double> key_of(const std::string& name, const std::vector<Rule>& rules) {
  for (const Rule& rule : rules) {
    std::smatch m;
    if (!std::regex_search(name, m, rule.pattern, std::regex_constants::match_continuous)) continue;
    std::vector<double> key{rule.ordinal};
    for (size_t i = 1; i < m.size(); ++i) key.push_back(std::stod(m[i].str()));
    if (rule.suffix) key.push_back(*rule.suffix);
    return key;
  }
  return {std::numeric_limits<double>::infinity()};
}

}  // namespace

bool has_layer_grouping(const std::string& arch) { return !rules_for(arch).empty(); }

std::vector<double> layer_decay_scales(const std::vector<std::string>& names, const std::string& arch, double decay) {
  const std::vector<Rule> rules = rules_for(arch);
  if (rules.empty()) throw Error(fmt::format("optim.layer_decay: model.arch {} has no layer grouping (vit_*, convnext_*, resnet*)", arch));
  std::vector<std::vector<double>> keys;
  std::map<std::vector<double>, int> layer_of_key;
  for (const std::string& name : names) {
    keys.push_back(key_of(name, rules));
    layer_of_key[keys.back()] = 0;
  }
  int layer = -1;
  for (auto& [key, id] : layer_of_key) {  // sorted, as timm sorts its keys
    if (layer < 0 || key.back() != kMatchPreviousGroup) ++layer;
    id = layer;
  }
  std::vector<double> scales;
  for (const auto& key : keys) scales.push_back(std::pow(decay, layer - layer_of_key[key]));
  return scales;
}

}  // namespace cvtrain
