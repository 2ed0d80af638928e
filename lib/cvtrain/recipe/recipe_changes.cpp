// Comparing two resolved recipes key by key (recipe_changes.h).
#include "cvtrain/recipe/recipe_changes.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>

namespace cvtrain {
namespace {

// Keys a resume may change without changing what is computed; a prefix ends with '.'.
constexpr const char* kOperationalKeys[] = {
    "output", "preflight", "device", "checkpoint.", "observe.", "profile.", "distributed.", "data.workers", "data.prefetch",
    "data.max_bad_fraction", "train.log_every", "train.max_bad_steps", "train.stop_at_epoch",
    // the global batch is what the step computes; how it is split is the job's layout
    "train.micro_batch", "train.accumulation"};

bool operational(const std::string& key) {
  return std::any_of(std::begin(kOperationalKeys), std::end(kOperationalKeys), [&](const std::string& k) {
    return k.back() == '.' ? key.compare(0, k.size(), k) == 0 : key == k;
  });
}

std::string flow_text(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

// Every leaf (a scalar or a list) under its dotted key.
void flatten(const YAML::Node& node, const std::string& prefix, std::map<std::string, std::string>& leaves) {
  if (!node.IsMap()) {
    leaves[prefix] = flow_text(node);
    return;
  }
  for (const auto& entry : node) flatten(entry.second, prefix.empty() ? entry.first.Scalar() : prefix + "." + entry.first.Scalar(), leaves);
}

std::map<std::string, std::string> leaves_of(const std::string& yaml) {
  std::map<std::string, std::string> leaves;
  flatten(YAML::Load(yaml), "", leaves);
  return leaves;
}

}  // namespace

std::vector<KeyChange> recipe_changes(const std::string& saved_yaml, const std::string& current_yaml) {
  const auto before = leaves_of(saved_yaml), after = leaves_of(current_yaml);
  std::map<std::string, KeyChange> changes;
  for (const auto& [key, value] : before) changes[key] = {key, value, "(unset)"};
  for (const auto& [key, value] : after) {
    const auto it = changes.find(key);
    if (it == changes.end()) changes[key] = {key, "(unset)", value};
    else it->second.after = value;
  }
  std::vector<KeyChange> differing;
  for (const auto& [key, change] : changes)
    if (change.before != change.after && !operational(key)) differing.push_back(change);
  return differing;
}

std::string describe_changes(const std::vector<KeyChange>& changes, size_t at_most) {
  std::string text;
  for (size_t i = 0; i < std::min(at_most, changes.size()); ++i)
    text += fmt::format("{}{} {} -> {}", text.empty() ? "" : ", ", changes[i].key, changes[i].before, changes[i].after);
  if (changes.size() > at_most) text += fmt::format(" and {} more", changes.size() - at_most);
  return text;
}

}  // namespace cvtrain
