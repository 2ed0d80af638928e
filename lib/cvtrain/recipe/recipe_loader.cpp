// Recipe loading: YAML files (with `base:` inheritance) and overrides are flattened into dotted
// keys that remember where they came from, then read through one schema table that also prints;
// the rules across keys are recipe_checks.cpp's.
#include "cvtrain/recipe/recipe_loader.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "cvtrain/core/error.h"
#include "cvtrain/core/text.h"
#include "cvtrain/recipe/key_hints.h"
#include "cvtrain/recipe/recipe_checks.h"

namespace cvtrain {
namespace {

namespace fs = std::filesystem;
using MaybeError = std::optional<std::string>;

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

// `augment: {}` or an `augment:` left empty: a section that sets none of its keys (a leaf key left
// empty is still an error, "got nothing").
bool is_empty_section(const YAML::Node& value, const std::string& path) {
  if (!(value.IsMap() && value.size() == 0) && !value.IsNull()) return false;
  const std::vector<std::string>& keys = recipe_keys();
  return std::any_of(keys.begin(), keys.end(), [&](const std::string& key) { return key.rfind(path + ".", 0) == 0; });
}

void flatten(const YAML::Node& map, const std::string& prefix,
             const std::function<std::string(const YAML::Node&)>& origin_of, Tree& tree) {
  for (const auto& item : map)
    if (is_merge_key(item)) flatten_merged(item.second, prefix, origin_of, tree);
  for (const auto& item : map) {
    if (is_merge_key(item)) continue;
    const std::string path = prefix.empty() ? item.first.Scalar() : prefix + "." + item.first.Scalar();
    if (item.second.IsMap() && item.second.size() > 0)
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
  if (value.IsMap() && value.size() > 0) {
    flatten(value, key, origin_of, tree);
  } else {
    put_leaf(tree, key, Leaf{value, origin});
  }
}

// ---- value conversion: YAML node -> typed field, with a message on mismatch ----

// Scalars go through yaml-cpp's own conversion ("2.5" is no integer, "yes" is a boolean).
template <class T>
MaybeError convert_scalar(const YAML::Node& n, T& out, const char* expected) {
  try {
    if (n.IsScalar()) {
      out = n.as<T>();
      return std::nullopt;
    }
  } catch (const YAML::Exception&) {
  }
  const std::string got = n.IsNull() ? "nothing (an empty value or null)" : n.IsScalar() ? "'" + n.Scalar() + "'" : "a list or map";
  return fmt::format("expected {}, got {}", expected, got);
}

MaybeError convert(const YAML::Node& n, int64_t& out) { return convert_scalar(n, out, "an integer"); }
// YAML's .inf and .nan are numbers to yaml-cpp; no recipe key means anything by them (a rate of
// infinity trains nothing, a NaN passes every `>` check), so a number must be finite.
MaybeError convert(const YAML::Node& n, double& out) {
  if (auto e = convert_scalar(n, out, "a number")) return e;
  if (!std::isfinite(out)) return fmt::format("expected a finite number, got '{}'", n.Scalar());
  return std::nullopt;
}
MaybeError convert(const YAML::Node& n, bool& out) { return convert_scalar(n, out, "true or false"); }

MaybeError convert(const YAML::Node& n, std::string& out) {
  if (n.IsNull()) {  // `data.val:` or `data.val=` clears a path
    out.clear();
    return std::nullopt;
  }
  if (!n.IsScalar()) return std::string("expected a single value, got a list or map");
  out = n.Scalar();
  return std::nullopt;
}

// "'x' is not one of: a, b, c" with what was meant: another tool's spelling of a choice, or a near miss.
std::string not_a_choice(const std::string& value, const std::vector<std::string>& choices) {
  const std::string choice_list = join(choices, ", ");
  if (const auto hint = value_hint(value, choices)) return fmt::format("'{}' is not one of: {} ({})", value, choice_list, *hint);
  const std::string guess = closest_match(value, choices);
  return fmt::format("'{}' is not one of: {}{}", value, choice_list, guess.empty() ? "" : fmt::format(" (did you mean '{}'?)", guess));
}

// A choice: one of the enumeration's names (recipe.h), with a guess for a near miss.
template <class E, std::enable_if_t<std::is_enum_v<E>, int> = 0>
MaybeError convert(const YAML::Node& n, E& out) {
  std::string name;
  if (auto e = convert(n, name)) return e;
  if (const auto value = enum_of<E>(name)) {
    out = *value;
    return std::nullopt;
  }
  return not_a_choice(name, {EnumNames<E>::names.begin(), EnumNames<E>::names.end()});
}

MaybeError convert(const YAML::Node& n, ResumeChoice& out) {
  std::string spelled;
  if (auto e = convert(n, spelled)) return e;
  if (spelled.empty()) return std::string("expected auto, none or the path of a checkpoint folder");
  // YAML's booleans (and Python's None) mean what they say here, not folders of those names.
  std::string word = spelled;
  std::transform(word.begin(), word.end(), word.begin(), [](unsigned char c) { return std::tolower(c); });
  const bool off = word == "none" || word == "false" || word == "no" || word == "off";
  const bool on = word == "auto" || word == "true" || word == "yes" || word == "on";
  out.mode = on ? ResumeMode::kAuto : off ? ResumeMode::kNone : ResumeMode::kFolder;
  out.folder = out.mode == ResumeMode::kFolder ? spelled : std::string();
  return std::nullopt;
}

MaybeError convert(const YAML::Node& n, FlipChance& out) {
  bool on = false;
  if (!convert(n, on)) {
    out.p = on ? 0.5 : 0.0;
    return std::nullopt;
  }
  double p = -1;
  if (!convert(n, p) && p >= 0 && p <= 1) {
    out.p = p;
    return std::nullopt;
  }
  const std::string got = n.IsScalar() ? "'" + n.Scalar() + "'" : std::string("a list or map");
  return fmt::format("expected a chance in [0, 1] (timm's --hflip 0.5), true (0.5) or false, got {}", got);
}

MaybeError convert(const YAML::Node& n, AugmentPolicy& out) {
  std::string spelled;
  if (auto e = convert(n, spelled)) return e;
  try {
    out = parse_augment_policy(spelled);
  } catch (const std::invalid_argument& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

MaybeError convert(const YAML::Node& n, std::vector<double>& out) {
  if (!n.IsSequence()) {
    double one = 0;
    if (n.IsScalar() && !convert(n, one)) return fmt::format("expected a list of numbers; for this one alone, write [{}]", n.Scalar());
    return fmt::format("expected a list of numbers, e.g. [0.5, 1.0], got '{}'", n.IsScalar() ? n.Scalar() : std::string("a map"));
  }
  out.clear();
  for (const auto& element : n) {
    double v = 0;
    if (auto e = convert(element, v)) return "in the list: " + *e;
    out.push_back(v);
  }
  return std::nullopt;
}

MaybeError convert(const YAML::Node& n, std::vector<std::string>& out) {
  if (n.IsNull()) {  // `data.class_names: null` (or `~`, or nothing) clears a list a base recipe set
    out.clear();
    return std::nullopt;
  }
  if (!n.IsSequence())
    return fmt::format("expected a list of names, e.g. [cat, dog], got {}", n.IsScalar() ? "'" + n.Scalar() + "'" : "a map");
  out.clear();
  for (const auto& element : n) {
    if (!element.IsScalar()) return std::string("in the list: expected a name, got a list or map");
    out.push_back(element.Scalar());
  }
  return std::nullopt;
}

// Doubles print in their shortest exact form (0.1, not 0.10000000000000001), with a dot before any
// exponent (1.0e-08, not 1e-08): YAML 1.1 readers such as PyYAML take "1e-08" for a string.
std::string yaml_number(double value) {
  std::string text = fmt::format("{}", value);
  const auto exponent = text.find('e');
  if (exponent != std::string::npos && text.find('.') == std::string::npos) text.insert(exponent, ".0");
  return text;
}

template <class T>
YAML::Node to_node(const T& value) {
  if constexpr (std::is_same_v<T, double>) {
    return YAML::Node(yaml_number(value));
  } else if constexpr (std::is_enum_v<T>) {
    return YAML::Node(name_of(value));
  } else if constexpr (std::is_same_v<T, ResumeChoice>) {
    return YAML::Node(value.spelled());
  } else if constexpr (std::is_same_v<T, AugmentPolicy>) {
    return YAML::Node(value.spelled);
  } else if constexpr (std::is_same_v<T, FlipChance>) {  // true and false as recipes have always said them
    return value.p == 0.5 ? YAML::Node(true) : value.p == 0 ? YAML::Node(false) : to_node(value.p);
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    YAML::Node node(YAML::NodeType::Sequence);
    for (const std::string& v : value) node.push_back(v);
    node.SetStyle(YAML::EmitterStyle::Flow);
    return node;
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    YAML::Node node(YAML::NodeType::Sequence);
    for (double v : value) node.push_back(to_node(v));
    node.SetStyle(YAML::EmitterStyle::Flow);
    return node;
  } else {
    return YAML::Node(value);
  }
}

// ---- the schema: one Field per key, reading, checking and printing it ----

struct Field {
  std::string path;
  std::function<MaybeError(const YAML::Node&, Recipe&)> read;
  std::function<YAML::Node(const Recipe&)> render;
};

struct NoCheck {
  template <class T>
  MaybeError operator()(const T&) const { return std::nullopt; }
};

template <class Get, class Check = NoCheck>
Field field(std::string path, Get get, Check check = {}) {
  using T = std::decay_t<decltype(get(std::declval<Recipe&>()))>;
  return Field{std::move(path),
               [get, check](const YAML::Node& node, Recipe& recipe) -> MaybeError {
                 T value{};
                 if (auto e = convert(node, value)) return e;
                 if (auto e = check(value)) return e;
                 get(recipe) = value;
                 return std::nullopt;
               },
               [get](const Recipe& recipe) { return to_node(get(const_cast<Recipe&>(recipe))); }};
}

auto at_least(double low) {
  return [low](auto v) -> MaybeError {
    if (v >= low) return std::nullopt;
    return fmt::format("must be at least {}, got {}", low, v);
  };
}
auto in_range(double low, double high) {
  return [low, high](auto v) -> MaybeError {
    if (v >= low && v <= high) return std::nullopt;
    return fmt::format("must be in [{}, {}], got {}", low, high, v);
  };
}
auto positive() {
  return [](auto v) -> MaybeError {
    if (v > 0) return std::nullopt;
    return fmt::format("must be greater than 0, got {}", v);
  };
}
auto one_of(std::vector<std::string> choices) {
  return [choices](const std::string& v) -> MaybeError {
    if (std::find(choices.begin(), choices.end(), v) != choices.end()) return std::nullopt;
    return not_a_choice(v, choices);
  };
}
MaybeError auto_or_count(const std::string& v) {
  if (v == "auto") return std::nullopt;
  try {
    size_t used = 0;
    if (std::stoll(v, &used) >= 1 && used == v.size()) return std::nullopt;
  } catch (const std::exception&) {
  }
  return fmt::format("expected 'auto' or a whole number >= 1, got '{}'", v);
}

// `KEY(train.epochs)` spells the recipe key and the struct member once: they are the same path.
#define KEY(member) #member, [](Recipe& r) -> auto& { return r.member; }

const std::vector<Field>& schema() {
  static const std::vector<Field> fields = {
      field(KEY(model.arch)),
      field(KEY(model.num_classes), at_least(2)),
      field(KEY(model.image_size), in_range(8, 4096)),
      field(KEY(model.in_channels), in_range(0, 64)),
      field(KEY(model.small_stem)),
      field(KEY(model.sync_bn)),
      field(KEY(model.drop_path), in_range(0, 1)),
      field(KEY(model.grad_checkpointing)),
      field(KEY(model.pretrained)),
      field(KEY(model.pretrained_strict)),
      field(KEY(data.format)),
      field(KEY(data.train)),
      field(KEY(data.val)),
      field(KEY(data.root)),
      field(KEY(data.class_names)),
      field(KEY(data.decoder)),
      field(KEY(data.workers), in_range(0, 256)),
      field(KEY(data.prefetch), in_range(1, 64)),
      field(KEY(data.max_samples), at_least(0)),
      field(KEY(data.max_val_samples), at_least(0)),
      field(KEY(data.mean)),
      field(KEY(data.std)),
      field(KEY(data.max_bad_fraction), in_range(0, 1)),
      field(KEY(data.max_image_pixels), at_least(0)),
      field(KEY(data.eval_crop_fraction),
            [](double v) -> MaybeError {
              if (v > 0 && v <= 1) return std::nullopt;
              return fmt::format("must be in (0, 1], got {}", v);
            }),
      field(KEY(data.eval_interpolation),
            [](AugmentInterpolation v) -> MaybeError {
              if (v != AugmentInterpolation::kRandom) return std::nullopt;
              return "random draws a filter per sample, which evaluation does not; use bilinear or bicubic";
            }),
      field(KEY(augment.hflip)),
      field(KEY(augment.vflip)),
      field(KEY(augment.random_crop_padding), in_range(0, 256)),
      field(KEY(augment.random_resized_crop)),
      field(KEY(augment.random_resized_crop_ratio)),
      field(KEY(augment.interpolation)),
      field(KEY(augment.label_smoothing), in_range(0, 0.99)),
      field(KEY(augment.mixup), in_range(0, 100)),
      field(KEY(augment.cutmix), in_range(0, 100)),
      field(KEY(augment.mix_prob), in_range(0, 1)),
      field(KEY(augment.switch_prob), in_range(0, 1)),
      field(KEY(augment.auto_augment)),
      field(KEY(augment.aa_interpolation)),
      field(KEY(augment.color_jitter), in_range(0, 1)),
      field(KEY(augment.random_erasing.prob), in_range(0, 1)),
      field(KEY(augment.random_erasing.mode)),
      field(KEY(augment.random_erasing.count), in_range(1, 100)),
      field(KEY(augment.random_erasing.min_area), in_range(0, 1)),
      field(KEY(augment.random_erasing.max_area), in_range(0, 1)),
      field(KEY(augment.random_erasing.min_aspect), in_range(0.01, 1)),
      field(KEY(augment.repeats), in_range(1, 16)),
      field(KEY(train.ema.decay),
            [](double v) -> MaybeError {
              if (v >= 0 && v < 1) return std::nullopt;
              return fmt::format("must be in [0, 1) (0 = off), got {}", v);
            }),
      field(KEY(train.ema.warmup)),
      field(KEY(train.ema.every_steps), at_least(1)),
      field(KEY(train.loss)),
      field(KEY(train.bce_target_threshold), in_range(0, 1)),
      field(KEY(train.epochs), at_least(1)),
      field(KEY(train.max_steps), at_least(0)),
      field(KEY(train.stop_at_epoch), at_least(0)),
      field(KEY(train.global_batch), at_least(0)),
      field(KEY(train.micro_batch), at_least(0)),
      field(KEY(train.accumulation), at_least(0)),
      field(KEY(train.grad_clip), at_least(0)),
      field(KEY(train.channels_last)),
      field(KEY(train.cudnn_benchmark)),
      field(KEY(train.cuda_graphs)),
      field(KEY(train.log_every), at_least(1)),
      field(KEY(train.max_bad_steps), at_least(1)),
      field(KEY(train.seed), at_least(0)),
      field(KEY(optim.name)),
      field(KEY(optim.lr), positive()),
      field(KEY(optim.momentum), in_range(0, 1)),
      field(KEY(optim.nesterov)),
      field(KEY(optim.weight_decay), at_least(0)),
      field(KEY(optim.betas)),
      field(KEY(optim.eps), positive()),
      field(KEY(optim.max_grad_norm), at_least(0)),
      field(KEY(optim.trust_clip)),
      field(KEY(optim.trust_coeff), positive()),
      field(KEY(optim.layer_decay), in_range(0, 1)),
      field(KEY(optim.implementation)),
      field(KEY(schedule.name)),
      field(KEY(schedule.warmup_epochs), at_least(0)),
      field(KEY(schedule.warmup_lr)),
      field(KEY(schedule.warmup_prefix)),
      field(KEY(schedule.step_on_epochs)),
      field(KEY(schedule.min_lr), at_least(0)),
      field(KEY(schedule.cooldown_epochs), at_least(0)),
      field(KEY(schedule.milestones)),
      field(KEY(schedule.gamma), in_range(0, 1)),
      field(KEY(precision)),
      field(KEY(strategy)),
      field(KEY(device)),
      field(KEY(distributed.nnodes), at_least(1)),
      field(KEY(distributed.nproc_per_node), auto_or_count),
      field(KEY(distributed.node_rank), at_least(0)),
      field(KEY(distributed.master_addr)),
      field(KEY(distributed.master_port), in_range(0, 65535)),
      field(KEY(distributed.backend), one_of({"auto", "nccl", "gloo"})),
      field(KEY(distributed.timeout_s), at_least(1)),
      field(KEY(distributed.bucket_mb), positive()),
      field(KEY(distributed.max_restarts), in_range(0, 1000)),
      field(KEY(distributed.hang_timeout_s), at_least(0)),
      field(KEY(distributed.stop_grace_s), in_range(0, 3600)),
      field(KEY(checkpoint.every_steps), at_least(0)),
      field(KEY(checkpoint.every_minutes), at_least(0)),
      field(KEY(checkpoint.keep), at_least(1)),
      field(KEY(checkpoint.resume)),
      field(KEY(checkpoint.keep_best)),
      field(KEY(observe.breakdown)),
      field(KEY(observe.peak_tflops), at_least(0)),
      field(KEY(observe.input_bound), in_range(0.01, 1)),
      field(KEY(observe.comm_bound), in_range(0.01, 1)),
      field(KEY(observe.straggler_score), in_range(0.01, 1)),
      field(KEY(observe.chronic_windows), at_least(1)),
      field(KEY(observe.memory_pressure), in_range(0.01, 1)),
      field(KEY(observe.memory_growth), in_range(0.01, 100)),
      field(KEY(observe.storage_bound), in_range(0.01, 1)),
      field(KEY(observe.launch_bound), in_range(0.01, 1)),
      field(KEY(profile.steps)),
      field(KEY(profile.ranks)),
      field(KEY(profile.tool)),
      field(KEY(preflight)),
      field(KEY(output)),
  };
  return fields;
}
#undef KEY

std::string section_of(const std::string& path) { return path.substr(0, path.find('.')); }

// "; to choose one, write model: {arch: resnet50}" for a section given one value (model: resnet50,
// as some tools' configs name the model), where the section has a key that chooses.
std::string chosen_by_value(const std::string& section, const YAML::Node& value) {
  static const std::map<std::string, std::string> choosing_key{{"model", "arch"},      {"optim", "name"},
                                                               {"schedule", "name"},   {"data", "train"},
                                                               {"train.ema", "decay"}, {"augment.random_erasing", "prob"}};
  const auto it = choosing_key.find(section);
  if (it == choosing_key.end() || !value.IsScalar() || value.Scalar().empty()) return "";
  return fmt::format("; to choose one, write {}: {{{}: {}}}", section, it->second, value.Scalar());
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

std::vector<std::string> recipe_keys() {
  std::vector<std::string> keys;
  for (const auto& f : schema()) keys.push_back(f.path);
  return keys;
}

std::optional<std::string> value_problem(const std::string& key, const std::string& value) {
  const auto& fields = schema();
  const auto field = std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return f.path == key; });
  if (field == fields.end()) return "not a recipe key";
  try {
    Recipe scratch;
    return field->read(YAML::Load(value), scratch);
  } catch (const YAML::Exception& e) {
    return "cannot parse the value: " + e.msg;
  }
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

  std::map<std::string, const Field*> by_path;
  for (const auto& f : schema()) by_path[f.path] = &f;
  Recipe recipe;
  std::set<std::string> failed;
  take_auto_micro_batch(tree, recipe.train);
  for (const auto& [key, leaf] : tree) {
    const auto it = by_path.find(key);
    if (it == by_path.end()) {
      problems.add(leaf.origin, key, unknown_key_message(key, leaf.value));
    } else if (auto e = it->second->read(leaf.value, recipe)) {
      problems.add(leaf.origin, key, *e);
      failed.insert(key);
    }
  }
  for (const auto& [key, leaf] : tree) recipe.origins[key] = leaf.origin;
  const std::string unset_origin = fmt::format("{} (not set)", path);
  for (const auto& f : schema()) recipe.origins.emplace(f.path, unset_origin);
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

std::string recipe_to_yaml(const Recipe& recipe) {
  YAML::Node root(YAML::NodeType::Map);
  for (const auto& f : schema()) {  // a.b.c goes to root[a][b][c]
    YAML::Node parent = root;
    size_t start = 0;
    for (size_t dot = f.path.find('.'); dot != std::string::npos; start = dot + 1, dot = f.path.find('.', start)) {
      YAML::Node child = parent[f.path.substr(start, dot - start)];
      parent.reset(child);
    }
    parent[f.path.substr(start)] = f.render(recipe);
  }
  if (recipe.train.micro_batch_auto) {
    root["train"]["micro_batch"] = "auto";
    root["train"].remove("accumulation");  // derived once the micro-batch is found
  }
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

}  // namespace cvtrain
