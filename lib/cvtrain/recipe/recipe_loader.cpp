// Recipe loading: YAML files (with `base:` inheritance) and overrides are flattened into dotted
// keys that remember where they came from, then read through the schema (recipe_schema.cpp); the
// rules across keys are recipe_checks.cpp's.
#include "cvtrain/recipe/recipe_loader.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include "cvtrain/core/error.h"
#include "cvtrain/core/text.h"
#include "cvtrain/recipe/key_hints.h"
#include "cvtrain/recipe/recipe_checks.h"
#include "cvtrain/recipe/recipe_schema.h"

namespace cvtrain {
namespace {

namespace fs = std::filesystem;

// One value of the recipe and where it was set ("recipes/a.yaml:12" or "override 'x=1'").
struct Leaf {
  YAML::Node value;
  std::string origin;
};
using Tree = std::map<std::string, Leaf>;

class Problems {
 public:
  void add(const std::string& origin, const std::string& key, const std::string& message) {
    list_.push_back(key.empty() ? fmt::format("{}: {}", origin, message)
                                : fmt::format("{}: {}: {}", origin, key, message));
  }
  bool empty() const { return list_.empty(); }
  size_t size() const { return list_.size(); }
  void throw_if_any() const {
    if (!list_.empty()) throw RecipeError(list_);
  }

 private:
  std::vector<std::string> list_;
};

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// A leaf replaces the subtree below it and any leaf above it: later definitions win whole.
void put_leaf(Tree& tree, const std::string& path, Leaf leaf) {
  for (auto it = tree.lower_bound(path + "."); it != tree.end() && starts_with(it->first, path + ".");)
    it = tree.erase(it);
  for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', dot + 1))
    tree.erase(path.substr(0, dot));
  tree[path] = std::move(leaf);
}

void flatten(const YAML::Node& map, const std::string& prefix,
             const std::function<std::string(const YAML::Node&)>& origin_of, Tree& tree);

// YAML's merge key (`<<: *defaults`, or a list of them, the first winning): the merged maps are
// laid down before the map's own keys, which win, one leaf at a time as base: merges.
void flatten_merged(const YAML::Node& merged, const std::string& prefix,
                    const std::function<std::string(const YAML::Node&)>& origin_of, Tree& tree) {
  if (merged.IsMap()) return flatten(merged, prefix, origin_of, tree);
  if (!merged.IsSequence()) return;  // not a map to merge: the schema reports the key
  for (size_t i = merged.size(); i-- > 0;) flatten_merged(merged[i], prefix, origin_of, tree);
}

template <class Item>
bool is_merge_key(const Item& item) {
  return item.first.Scalar() == "<<" && (item.second.IsMap() || item.second.IsSequence());
}

// Whether recipe keys lie under `path` (model, train.ema).
bool is_section(const std::string& path) {
  const std::vector<std::string> keys = recipe_keys();
  return std::any_of(keys.begin(), keys.end(), [&](const std::string& key) { return key.rfind(path + ".", 0) == 0; });
}

// `augment: {}` or an `augment:` left empty: a section that sets none of its keys (a leaf key left
// empty is still an error, "got nothing").
bool is_empty_section(const YAML::Node& value, const std::string& path) {
  return ((value.IsMap() && value.size() == 0) || value.IsNull()) && is_section(path);
}

void flatten(const YAML::Node& map, const std::string& prefix,
             const std::function<std::string(const YAML::Node&)>& origin_of, Tree& tree) {
  for (const auto& item : map)
    if (is_merge_key(item)) flatten_merged(item.second, prefix, origin_of, tree);
  for (const auto& item : map) {
    if (is_merge_key(item)) continue;
    const std::string path = prefix.empty() ? item.first.Scalar() : prefix + "." + item.first.Scalar();
    if (item.second.IsMap() && item.second.size() > 0 && !is_recipe_key(path))  // a key whose value is a map (tags) stays whole
      flatten(item.second, path, origin_of, tree);
    else if (!is_empty_section(item.second, path))
      put_leaf(tree, path, Leaf{item.second, origin_of(item.first)});
  }
}

// yaml-cpp keeps both entries of a key written twice in one map, and flattening would let the
// second win without a word: each is an error naming both lines.
void check_duplicate_keys(const YAML::Node& map, const std::string& prefix, const fs::path& file, Problems& problems) {
  std::map<std::string, int> first_line;
  for (const auto& item : map) {
    const std::string key = item.first.Scalar();
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    const int line = item.first.Mark().line + 1;
    const auto [seen, inserted] = first_line.emplace(key, line);
    if (!inserted)
      problems.add(fmt::format("{}:{}", file.string(), line), path,
                   fmt::format("set twice in one map (first at line {}); a YAML map holds each key once", seen->second));
    if (item.second.IsMap()) check_duplicate_keys(item.second, path, file, problems);
  }
}

// yaml-cpp's message for a tab in the indentation ("illegal map value") does not say so.
std::string tab_hint(const fs::path& file, int line) {
  std::ifstream in(file);
  std::string text;
  for (int i = 0; i <= line && std::getline(in, text);) ++i;
  const size_t indent_end = text.find_first_not_of(" \t");
  return text.substr(0, indent_end).find('\t') == std::string::npos ? "" : " (this line is indented with a tab; YAML indents with spaces)";
}

void load_file(const fs::path& file, std::vector<fs::path>& chain, Tree& tree, Problems& problems) {
  YAML::Node root;
  std::error_code ec;
  if (fs::is_directory(file, ec)) {
    problems.add(file.string(), "", "is a folder; a recipe is a YAML file");
    return;
  }
  try {
    root = YAML::LoadFile(file.string());
  } catch (const YAML::BadFile&) {
    problems.add(file.string(), "", "cannot read this recipe file");
    return;
  } catch (const YAML::ParserException& e) {
    problems.add(fmt::format("{}:{}", file.string(), e.mark.line + 1), "", "YAML syntax error: " + e.msg + tab_hint(file, e.mark.line));
    return;
  }
  if (root.IsNull()) {
    problems.add(file.string(), "", "the recipe file is empty; a recipe is a YAML map of sections (model:, data:, train: ...)");
    return;
  }
  if (!root.IsMap()) {
    problems.add(file.string(), "", "a recipe must be a YAML map of sections (model:, data:, train: ...)");
    return;
  }
  const size_t problems_before = problems.size();
  check_duplicate_keys(root, "", file, problems);
  if (problems.size() > problems_before) return;
  const auto origin_of = [&](const YAML::Node& key) { return fmt::format("{}:{}", file.string(), key.Mark().line + 1); };
  const YAML::Node& const_root = root;
  if (const YAML::Node base = const_root["base"]) {
    const fs::path base_path = file.parent_path() / (base.IsScalar() ? base.Scalar() : "");
    if (!base.IsScalar()) {
      problems.add(origin_of(base), "base", "expected the path of another recipe");
    } else if (std::find(chain.begin(), chain.end(), fs::weakly_canonical(base_path)) != chain.end()) {
      problems.add(origin_of(base), "base", fmt::format("'{}' inherits from itself", base.Scalar()));
    } else if (!fs::exists(base_path)) {
      problems.add(origin_of(base), "base", fmt::format("'{}' does not exist", base_path.string()));
    } else if (fs::is_directory(base_path)) {
      problems.add(origin_of(base), "base", fmt::format("'{}' is a folder, not a recipe file", base_path.string()));
    } else {
      chain.push_back(fs::weakly_canonical(base_path));
      load_file(base_path, chain, tree, problems);
      chain.pop_back();
    }
  }
  // `sweep:` is read by `cvtrain sweep` alone (recipe/sweep_space.h): a trial trains the rest.
  // Top-level `x-...` keys hold YAML anchors for merge keys (docker compose's extension fields).
  YAML::Node own(YAML::NodeType::Map);
  for (const auto& item : root) {
    const std::string& key = item.first.Scalar();
    if (key != "base" && key != "sweep" && !starts_with(key, "x-")) own[item.first] = item.second;
  }
  flatten(own, "", origin_of, tree);
}

void apply_override(const std::string& text, Tree& tree, Problems& problems) {
  const std::string origin = fmt::format("override '{}'", text);
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    problems.add(origin, "", "expected key.path=value, e.g. train.epochs=5");
    return;
  }
  const std::string key = text.substr(0, eq);
  YAML::Node value;
  try {
    value = YAML::Load(text.substr(eq + 1));
  } catch (const YAML::ParserException& e) {
    problems.add(origin, key, "cannot parse the value: " + e.msg);
    return;
  }
  const auto origin_of = [&](const YAML::Node&) { return origin; };
  if (value.IsMap() && value.size() > 0 && !is_recipe_key(key)) {
    flatten(value, key, origin_of, tree);
  } else {
    put_leaf(tree, key, Leaf{value, origin});
  }
}

std::string section_of(const std::string& path) { return path.substr(0, path.find('.')); }

// "; to choose one, write model: {arch: resnet50}" for a section given one value (model: resnet50,
// as some tools' configs name the model), where the section has a key that chooses.
std::string chosen_by_value(const std::string& section, const YAML::Node& value) {
  static const std::map<std::string, std::string> choosing_key{{"model", "arch"},      {"optim", "name"},
                                                               {"schedule", "name"},   {"data", "train"},
                                                               {"train.ema", "decay"}, {"augment.random_erasing", "prob"}};
  const auto it = choosing_key.find(section);
  if (it == choosing_key.end() || !value.IsScalar() || value.Scalar().empty()) return "";
  // data: synthetic (or imagefolder...) names a format, not the training data's path.
  const bool format = section == "data" && enum_of<DataFormat>(value.Scalar()).has_value();
  return fmt::format("; to choose one, write {}: {{{}: {}}}", section, format ? "format" : it->second, value.Scalar());
}

std::string unknown_key_message(const std::string& path, const YAML::Node& value) {
  std::vector<std::string> keys = recipe_keys();
  std::vector<std::string> siblings, children;
  for (const auto& k : keys) {
    if (k.find('.') != std::string::npos && section_of(k) == section_of(path)) siblings.push_back(k.substr(k.find('.') + 1));
    if (k.rfind(path + ".", 0) == 0) children.push_back(k.substr(path.size() + 1));  // path is a section (train.ema too)
  }
  if (!children.empty())
    return fmt::format("is a section, not a value; set its keys: {}{}", join(children, ", "), chosen_by_value(path, value));
  std::string message = "unknown key";
  if (section_of(path) == "sweep")  // the sweep: section is cvtrain sweep's, which training skips
    return message +
           "; sweep.* keys are for `cvtrain sweep --recipe R sweep.KEY=VALUE`, which reads the sweep: section; training ignores it";
  if (const auto hint = key_hint(path, keys)) return message + "; " + *hint;
  if (const std::string head = section_of(path); head != path && std::find(keys.begin(), keys.end(), head) != keys.end())
    return message + fmt::format("; {0} takes one value, not keys under it: {0}: VALUE in a recipe, {0}=VALUE as an override", head);
  if (const std::string guess = closest_match(path, keys); !guess.empty()) return message + fmt::format(" (did you mean '{}'?)", guess);
  if (!siblings.empty()) return message + fmt::format("; {} has: {}", section_of(path), join(siblings, ", "));
  std::set<std::string> sections;
  for (const auto& k : keys) sections.insert(section_of(k));
  return message + fmt::format("; sections are: {} (a top-level key that only holds YAML anchors starts with x-)",
                               join({sections.begin(), sections.end()}, ", "));
}

// ---- checks that involve more than one key: recipe_checks.cpp ----

// `train.micro_batch: auto` is a flag, not a number: noted, and read as 0 (unset) by the schema;
// the key keeps its origin for messages.
void take_auto_micro_batch(Tree& tree, TrainSpec& train) {
  const auto it = tree.find("train.micro_batch");
  if (it == tree.end() || !it->second.value.IsScalar() || it->second.value.Scalar() != "auto") return;
  train.micro_batch_auto = true;
  it->second.value = YAML::Node(0);
}

}  // namespace

int world_size_of(const DistributedSpec& spec, int visible_gpus) {
  const int per_node = spec.nproc_per_node == "auto" ? std::max(1, visible_gpus) : std::stoi(spec.nproc_per_node);
  return static_cast<int>(spec.nnodes) * per_node;
}

Recipe load_recipe(const std::string& path, const LoadOptions& options) {
  Problems problems;
  Tree tree;
  std::vector<fs::path> chain{fs::weakly_canonical(path)};
  if (!fs::exists(path)) throw RecipeError({fmt::format("{}: recipe file does not exist", path)});
  load_file(path, chain, tree, problems);
  // A file that cannot be read as a recipe (syntax, an empty file, a key set twice, a broken
  // base:) is the whole story: the keys it would have set are not missing.
  problems.throw_if_any();
  for (const auto& text : options.overrides) apply_override(text, tree, problems);

  Recipe recipe;
  std::set<std::string> failed;
  take_auto_micro_batch(tree, recipe.train);
  for (const auto& [key, leaf] : tree) {
    if (!is_recipe_key(key)) {
      problems.add(leaf.origin, key, unknown_key_message(key, leaf.value));
      // A section given one value lost the keys files set under it: rules about them would blame the defaults.
      if (is_section(key)) failed.insert(key);
    } else if (auto e = read_recipe_key(key, leaf.value, recipe)) {
      problems.add(leaf.origin, key, *e);
      failed.insert(key);
    }
  }
  for (const auto& [key, leaf] : tree) recipe.origins[key] = leaf.origin;
  const std::string unset_origin = fmt::format("{} (not set)", path);
  for (const auto& key : recipe_keys()) recipe.origins.emplace(key, unset_origin);
  // A key that already failed to read holds its default: a rule about it, or one that compares
  // another key with it (the message names it), would blame what the user did not write.
  const auto names_a_failed_key = [&](const std::string& message) {
    return std::any_of(failed.begin(), failed.end(), [&](const std::string& k) { return message.find(k) != std::string::npos; });
  };
  cross_check(recipe, options, [&](const std::string& key, const std::string& message) {
    if (failed.count(key) || names_a_failed_key(message)) return;
    const auto it = tree.find(key);
    problems.add(it == tree.end() ? unset_origin : it->second.origin, key, message);
  });
  problems.throw_if_any();
  return recipe;
}

}  // namespace cvtrain
