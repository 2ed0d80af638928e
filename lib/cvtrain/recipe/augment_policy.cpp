// timm's op sets and policy tables (auto_augment.py), and its policy-string grammar with errors
// where timm would assert or silently skip a section.
#include "cvtrain/recipe/augment_policy.h"

#include <fmt/format.h>

#include <array>
#include <limits>
#include <stdexcept>


namespace cvtrain {
namespace {

using Op = AugmentOp;

constexpr std::array<const char*, 29> kOpNames{
    "AutoContrast", "Equalize", "Invert", "Rotate",
    "Posterize", "PosterizeIncreasing", "PosterizeOriginal",
    "Solarize", "SolarizeIncreasing", "SolarizeAdd",
    "Color", "ColorIncreasing", "Contrast", "ContrastIncreasing",
    "Brightness", "BrightnessIncreasing", "Sharpness", "SharpnessIncreasing",
    "ShearX", "ShearY", "TranslateXRel", "TranslateYRel",
    "Desaturate", "GaussianBlurRand",
    "TorchvisionShearX", "TorchvisionShearY", "TorchvisionTranslateX", "TorchvisionTranslateY", "Identity"};

// _RAND_TRANSFORMS and _RAND_INCREASING_TRANSFORMS.
const std::vector<Op> kRandOps{Op::kAutoContrast, Op::kEqualize, Op::kInvert, Op::kRotate, Op::kPosterize,
                               Op::kSolarize, Op::kSolarizeAdd, Op::kColor, Op::kContrast, Op::kBrightness,
                               Op::kSharpness, Op::kShearX, Op::kShearY, Op::kTranslateXRel, Op::kTranslateYRel};
const std::vector<Op> kRandIncreasingOps{
    Op::kAutoContrast, Op::kEqualize, Op::kInvert, Op::kRotate, Op::kPosterizeIncreasing,
    Op::kSolarizeIncreasing, Op::kSolarizeAdd, Op::kColorIncreasing, Op::kContrastIncreasing,
    Op::kBrightnessIncreasing, Op::kSharpnessIncreasing, Op::kShearX, Op::kShearY, Op::kTranslateXRel,
    Op::kTranslateYRel};
const std::vector<Op> kRand3aOps{Op::kSolarizeIncreasing, Op::kDesaturate, Op::kGaussianBlurRand};

struct WeightedOp {
  Op op;
  double weight;
};
// _RAND_WEIGHTED_0 ("tweights") and _RAND_WEIGHTED_3A ("t3aw").
const std::vector<WeightedOp> kRandWeighted0{
    {Op::kRotate, 3}, {Op::kShearX, 2}, {Op::kShearY, 2}, {Op::kTranslateXRel, 1}, {Op::kTranslateYRel, 1},
    {Op::kColorIncreasing, .25}, {Op::kSharpnessIncreasing, .25}, {Op::kAutoContrast, .25},
    {Op::kSolarizeIncreasing, .05}, {Op::kSolarizeAdd, .05}, {Op::kContrastIncreasing, .05},
    {Op::kBrightnessIncreasing, .05}, {Op::kEqualize, .05}, {Op::kPosterizeIncreasing, .05}, {Op::kInvert, .05}};
const std::vector<WeightedOp> kRandWeighted3a{
    {Op::kSolarizeIncreasing, 6}, {Op::kDesaturate, 6}, {Op::kGaussianBlurRand, 6}, {Op::kRotate, 3},
    {Op::kShearX, 2}, {Op::kShearY, 2}, {Op::kPosterizeIncreasing, 1}, {Op::kAutoContrast, 1},
    {Op::kColorIncreasing, 1}, {Op::kSharpnessIncreasing, 1}, {Op::kContrastIncreasing, 1},
    {Op::kBrightnessIncreasing, 1}, {Op::kEqualize, 1}, {Op::kInvert, 1}};

// auto_augment_policy_original: AutoAugment's ImageNet policy, (op, probability, magnitude) pairs.
const std::vector<std::vector<PolicyOp>> kOriginalPolicy{
    {{Op::kPosterizeOriginal, 0.4, 8}, {Op::kRotate, 0.6, 9}}, {{Op::kSolarize, 0.6, 5}, {Op::kAutoContrast, 0.6, 5}},
    {{Op::kEqualize, 0.8, 8}, {Op::kEqualize, 0.6, 3}}, {{Op::kPosterizeOriginal, 0.6, 7}, {Op::kPosterizeOriginal, 0.6, 6}},
    {{Op::kEqualize, 0.4, 7}, {Op::kSolarize, 0.2, 4}}, {{Op::kEqualize, 0.4, 4}, {Op::kRotate, 0.8, 8}},
    {{Op::kSolarize, 0.6, 3}, {Op::kEqualize, 0.6, 7}}, {{Op::kPosterizeOriginal, 0.8, 5}, {Op::kEqualize, 1.0, 2}},
    {{Op::kRotate, 0.2, 3}, {Op::kSolarize, 0.6, 8}}, {{Op::kEqualize, 0.6, 8}, {Op::kPosterizeOriginal, 0.4, 6}},
    {{Op::kRotate, 0.8, 8}, {Op::kColor, 0.4, 0}}, {{Op::kRotate, 0.4, 9}, {Op::kEqualize, 0.6, 2}},
    {{Op::kEqualize, 0.0, 7}, {Op::kEqualize, 0.8, 8}}, {{Op::kInvert, 0.6, 4}, {Op::kEqualize, 1.0, 8}},
    {{Op::kColor, 0.6, 4}, {Op::kContrast, 1.0, 8}}, {{Op::kRotate, 0.8, 8}, {Op::kColor, 1.0, 2}},
    {{Op::kColor, 0.8, 8}, {Op::kSolarize, 0.8, 7}}, {{Op::kSharpness, 0.4, 7}, {Op::kInvert, 0.6, 8}},
    {{Op::kShearX, 0.6, 5}, {Op::kEqualize, 1.0, 9}}, {{Op::kColor, 0.4, 0}, {Op::kEqualize, 0.6, 3}},
    {{Op::kEqualize, 0.4, 7}, {Op::kSolarize, 0.2, 4}}, {{Op::kSolarize, 0.6, 5}, {Op::kAutoContrast, 0.6, 5}},
    {{Op::kInvert, 0.6, 4}, {Op::kEqualize, 1.0, 8}}, {{Op::kColor, 0.6, 4}, {Op::kContrast, 1.0, 8}},
    {{Op::kEqualize, 0.8, 8}, {Op::kEqualize, 0.6, 3}}};

// auto_augment_policy_3a: DeiT III's three-augment, one of the three per image.
const std::vector<std::vector<PolicyOp>> k3aPolicy{
    {{Op::kSolarize, 1.0, 5}}, {{Op::kDesaturate, 1.0, 10}}, {{Op::kGaussianBlurRand, 1.0, 10}}};

[[noreturn]] void fail(const std::string& text, const std::string& message) {
  throw std::invalid_argument(fmt::format("cannot read the policy '{}': {}", text, message));
}

// "mstd0.5" -> ("mstd", "0.5"), as timm's re.split(r'(\d.*)'); no digits: an empty value.
std::pair<std::string, std::string> key_and_value(const std::string& section) {
  const size_t digit = section.find_first_of("0123456789");
  if (digit == std::string::npos) return {section, ""};
  return {section.substr(0, digit), section.substr(digit)};
}

double number_in(const std::string& text, const std::string& section, const std::string& value, bool whole) {
  try {
    size_t used = 0;
    const double v = whole ? static_cast<double>(std::stoi(value, &used)) : std::stod(value, &used);
    if (used == value.size()) return v;
  } catch (const std::exception&) {
  }
  fail(text, fmt::format("section '{}' needs {} after its letters", section, whole ? "a whole number" : "a number"));
}

std::vector<PolicyOp> with_magnitude(const std::vector<Op>& ops, double prob, double magnitude) {
  std::vector<PolicyOp> out;
  for (Op op : ops) out.push_back({op, prob, magnitude});
  return out;
}

AugmentPolicy parse_rand(const std::string& text, const std::vector<std::string>& sections) {
  AugmentPolicy policy;
  policy.kind = AugmentPolicy::Kind::kRand;
  double magnitude = 10, prob = 0.5;
  bool increasing = false;
  std::string op_set;
  for (size_t i = 1; i < sections.size(); ++i) {
    const std::string& s = sections[i];
    if (s.empty()) fail(text, "an empty section (two dashes in a row?)");
    if (s[0] == 't') {
      op_set = s.substr(1);
      continue;
    }
    const auto [key, value] = key_and_value(s);
    if (value.empty()) fail(text, fmt::format("section '{}' has no value (e.g. m9, n2, mstd0.5)", s));
    if (key == "m") magnitude = number_in(text, s, value, true);
    else if (key == "n") policy.num_layers = static_cast<int>(number_in(text, s, value, true));
    else if (key == "p") prob = number_in(text, s, value, false);
    else if (key == "mstd") policy.magnitude_std = number_in(text, s, value, false);
    else if (key == "mmax") policy.magnitude_max = number_in(text, s, value, true);
    else if (key == "inc") increasing = number_in(text, s, value, true) != 0;
    else fail(text, fmt::format("unknown section '{}'; RandAugment takes m, n, p, mstd, mmax, inc and t", s));
  }
  if (policy.magnitude_std > 100) policy.magnitude_std = std::numeric_limits<double>::infinity();
  if (policy.num_layers < 1) fail(text, "n must be at least 1");
  if (prob < 0 || prob > 1) fail(text, "p must be in [0, 1]");
  if (policy.magnitude_std < 0) fail(text, "mstd must not be negative");
  const std::vector<WeightedOp>* weighted = op_set == "weights" ? &kRandWeighted0 : op_set == "3aw" ? &kRandWeighted3a : nullptr;
  if (weighted) {
    for (const WeightedOp& w : *weighted) {
      policy.ops.push_back({w.op, prob, magnitude});
      policy.weights.push_back(w.weight);
    }
    if (policy.num_layers > static_cast<int>(policy.ops.size())) fail(text, "n is larger than the weighted op set");
  } else if (op_set == "3a") {
    policy.ops = with_magnitude(kRand3aOps, prob, magnitude);
  } else if (op_set.empty()) {
    policy.ops = with_magnitude(increasing ? kRandIncreasingOps : kRandOps, prob, magnitude);
  } else {
    fail(text, fmt::format("unknown op set 't{}'; t takes weights, 3a or 3aw", op_set));
  }
  return policy;
}

AugmentPolicy parse_table(const std::string& text, const std::vector<std::string>& sections,
                          const std::vector<std::vector<PolicyOp>>& table) {
  AugmentPolicy policy;
  policy.kind = AugmentPolicy::Kind::kAuto;
  policy.sub_policies = table;
  for (size_t i = 1; i < sections.size(); ++i) {
    const auto [key, value] = key_and_value(sections[i]);
    if (key != "mstd" || value.empty()) fail(text, fmt::format("unknown section '{}'; AutoAugment takes only mstd", sections[i]));
    policy.magnitude_std = number_in(text, sections[i], value, false);
  }
  return policy;
}

}  // namespace

const char* augment_op_name(AugmentOp op) { return kOpNames[static_cast<size_t>(op)]; }

std::optional<AugmentOp> augment_op_named(const std::string& name) {
  for (size_t i = 0; i < kOpNames.size(); ++i)
    if (name == kOpNames[i]) return static_cast<AugmentOp>(i);
  return std::nullopt;
}

AugmentPolicy parse_augment_policy(const std::string& text) {
  if (text.empty()) return {};
  std::vector<std::string> sections;
  size_t start = 0;
  for (size_t dash = text.find('-');; dash = text.find('-', start)) {
    sections.push_back(text.substr(start, dash == std::string::npos ? std::string::npos : dash - start));
    if (dash == std::string::npos) break;
    start = dash + 1;
  }
  AugmentPolicy policy;
  if (sections[0] == "rand") policy = parse_rand(text, sections);
  else if (sections[0] == "original") policy = parse_table(text, sections, kOriginalPolicy);
  else if (sections[0] == "3a") policy = parse_table(text, sections, k3aPolicy);
  else if (sections[0] == "ta_wide" && sections.size() == 1) policy.kind = AugmentPolicy::Kind::kTrivial;
  else if (sections[0] == "ta_wide")
    fail(text, fmt::format("unknown section '{}'; ta_wide (TrivialAugmentWide) takes none", sections[1]));
  else
    fail(text, fmt::format("'{}' is not a policy; expected rand-... (RandAugment, e.g. rand-m9-mstd0.5-inc1), original "
                           "(AutoAugment's ImageNet policy), 3a (DeiT III's three-augment) or ta_wide (TrivialAugmentWide)",
                           sections[0]));
  policy.spelled = text;
  return policy;
}

}  // namespace cvtrain
