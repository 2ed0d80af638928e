// load_sweep_space: one pass over the YAML, every problem collected with its line, then thrown at once.
#include "cvtrain/recipe/sweep_space.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "cvtrain/core/error.h"
#include "cvtrain/core/text.h"
#include "cvtrain/recipe/key_hints.h"
#include "cvtrain/recipe/recipe_loader.h"
#include "cvtrain/recipe/recipe_schema.h"

namespace cvtrain {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxBaseDepth = 64;  // deeper base: chains are cycles

struct Problems {
  std::string file;
  std::vector<std::string> list;
  std::map<std::string, std::string> overridden;  // key as messages name it -> the override that set it
  void add(const YAML::Node& at, const std::string& key, const std::string& message) {
    const auto by_override = overridden.find(key);
    if (by_override != overridden.end())
      list.push_back(fmt::format("override '{}': {}: {}", by_override->second, key, message));
    else
      list.push_back(fmt::format("{}:{}: {}: {}", file, at.Mark().line + 1, key, message));
  }
};

std::string yaml_text(const YAML::Node& value) {
  YAML::Emitter out;
  out << YAML::Flow << value;
  return out.c_str();
}

// " (W&B's bayes is tpe here)" where another tool spells `word` so, else "".
std::string foreign_word(const std::string& word) {
  const auto hint = sweep_word_hint(word);
  return hint ? " (" + *hint + ")" : "";
}

// A range's ends must be values of the key, and so must what it draws between them (uniform draws
// fractions, which an integer key refuses).
void check_range_values(const std::string& key, const SearchDimension& d, const YAML::Node& values, Problems& problems) {
  for (const YAML::Node& end : {values[0], values[1]})
    if (const auto problem = value_problem(key, yaml_text(end))) {
      problems.add(end, key, *problem);
      return;
    }
  if (d.kind == SearchDimension::Kind::kInt) return;
  const std::string between = fmt::format("{}", d.low + 0.37 * (d.high - d.low));
  if (const auto problem = value_problem(key, between))
    problems.add(values, key, fmt::format("draws values such as {} ({}); int: [low, high] draws whole numbers", between, *problem));
}

// {uniform: [a, b]}, {loguniform: [a, b]}, {int: [a, b]}, {choice: [...]} (also {grid: [...]}), or a
// plain list (a choice).
void read_dimension(const std::string& key, const YAML::Node& node, SweepSpace& space, Problems& problems) {
  SearchDimension d;
  d.key = key;
  YAML::Node values = node;
  std::string kind = "choice";
  if (node.IsMap()) {
    if (node.size() != 1) {
      const std::string first = node.size() > 0 ? node.begin()->first.as<std::string>("") : "";
      problems.add(node, key,
                   fmt::format("expected one of {{choice: [...]}}, {{grid: [...]}}, {{uniform: [lo, hi]}}, {{loguniform: [lo, hi]}}, "
                               "{{int: [lo, hi]}}{}",
                               node["distribution"] ? foreign_word("distribution") : foreign_word(first)));
      return;
    }
    kind = node.begin()->first.as<std::string>();
    values = node.begin()->second;
  } else if (!node.IsSequence()) {
    problems.add(node, key, fmt::format("'{}' is one value, not a search; give a list of choices or a range", yaml_text(node)));
    return;
  }
  if (kind == "choice" || kind == "grid") {
    if (!values.IsSequence() || values.size() == 0) {
      problems.add(values, key, fmt::format("{} needs a non-empty list", kind));
      return;
    }
    for (const auto& v : values) {
      d.choices.push_back(yaml_text(v));
      if (const auto problem = value_problem(key, d.choices.back())) problems.add(v, key, *problem);  // a typo any draw could meet
    }
    space.dimensions.push_back(d);
    return;
  }
  const std::vector<std::string> ranges{"uniform", "loguniform", "int"};
  if (std::find(ranges.begin(), ranges.end(), kind) == ranges.end()) {
    const std::string guess = closest_match(kind, {"choice", "grid", "uniform", "loguniform", "int"});
    const std::string foreign = foreign_word(kind);
    problems.add(node, key,
                 fmt::format("'{}' is not a kind of search (choice, grid, uniform, loguniform, int){}", kind,
                             !foreign.empty() ? foreign
                             : guess.empty()  ? ""
                                              : fmt::format("; did you mean '{}'?", guess)));
    return;
  }
  if (!values.IsSequence() || values.size() != 2) {
    problems.add(values, key, fmt::format("{} needs [low, high]", kind));
    return;
  }
  try {
    d.low = values[0].as<double>();
    d.high = values[1].as<double>();
  } catch (const YAML::Exception&) {
    problems.add(values, key, fmt::format("{} needs two numbers, got {}", kind, yaml_text(values)));
    return;
  }
  d.kind = kind == "uniform" ? SearchDimension::Kind::kUniform : kind == "loguniform" ? SearchDimension::Kind::kLogUniform : SearchDimension::Kind::kInt;
  if (!(d.low < d.high) && !(d.kind == SearchDimension::Kind::kInt && d.low == d.high))
    problems.add(values, key, fmt::format("the range [{}, {}] is empty; low must be below high", d.low, d.high));
  else if (d.kind == SearchDimension::Kind::kLogUniform && d.low <= 0)
    problems.add(values, key, fmt::format("loguniform needs a low end above 0, got {}", d.low));
  else if (d.kind == SearchDimension::Kind::kInt && (d.low != static_cast<double>(static_cast<int64_t>(d.low)) ||
                                                     d.high != static_cast<double>(static_cast<int64_t>(d.high))))
    problems.add(values, key, fmt::format("int needs whole numbers, got [{}, {}]", d.low, d.high));
  else
    check_range_values(key, d, values, problems);
  space.dimensions.push_back(d);
}

// The node of `key`, or the file's root when the key is absent (for the line of a message).
YAML::Node node_or_root(const YAML::Node& root, const char* key) { return root[key] ? root[key] : root; }

template <class T>
void read_scalar(const YAML::Node& root, const char* key, T& target, Problems& problems) {
  if (!root[key]) return;
  try {
    target = root[key].as<T>();
  } catch (const YAML::Exception&) {
    problems.add(root[key], key, fmt::format("cannot read '{}'", yaml_text(root[key])));
  }
}

YAML::Node load_yaml_file(const std::string& path, const char* what) {
  try {
    return YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw RecipeError({fmt::format("{}: cannot read the {}", path, what)});
  } catch (const YAML::Exception& e) {
    throw RecipeError({fmt::format("{}:{}: {}", path, e.mark.line + 1, e.msg)});
  }
}

const std::vector<std::string>& space_file_keys() {
  static const std::vector<std::string> keys{"space",    "metric", "mode",           "sampler",       "trials",
                                             "parallel", "seed",   "gpus_per_trial", "early_stopping"};
  return keys;
}

bool is_recipe_section(const std::string& name, const std::vector<std::string>& known_keys) {
  return std::any_of(known_keys.begin(), known_keys.end(), [&](const std::string& key) { return key.rfind(name + ".", 0) == 0; });
}

// Keys at the top that a space file does not have. Returns whether any was a recipe key or section
// written there instead of under space: (the usual slip, said as such).
bool check_top_keys(const YAML::Node& root, const std::vector<std::string>& known_keys, Problems& problems) {
  const std::vector<std::string>& keys = space_file_keys();
  bool misplaced = false;
  for (const auto& item : root) {
    const std::string name = item.first.as<std::string>();
    if (std::find(keys.begin(), keys.end(), name) != keys.end()) continue;
    const bool recipe_key =
        std::find(known_keys.begin(), known_keys.end(), name) != known_keys.end() || is_recipe_section(name, known_keys);
    misplaced = misplaced || recipe_key;
    const std::string guess = closest_match(name, keys);
    // A section written as a map (optim: {lr: [...]}) is searched as dotted keys (optim.lr).
    const std::string example =
        item.second.IsMap() && item.second.size() > 0 ? name + "." + item.second.begin()->first.as<std::string>() : name;
    problems.add(
        item.first, name,
        recipe_key ? fmt::format("a recipe key at the top of the file; the keys to search go under space:, dotted, e.g. space: {{{}: ...}}",
                                 example)
                   : fmt::format("not a key of a search space file ({}){}", join(keys, ", "),
                                 sweep_word_hint(name) ? "; " + *sweep_word_hint(name)
                                 : guess.empty()       ? ""
                                                       : fmt::format("; did you mean '{}'?", guess)));
  }
  return misplaced;
}

// "not a recipe key" with the key meant: another tool's name for it, the right section, or a typo's nearest key.
std::string not_a_recipe_key(const std::string& key, const std::vector<std::string>& known_keys) {
  if (const auto hint = key_hint(key, known_keys)) return "not a recipe key; " + *hint;
  const std::string guess = closest_match(key, known_keys);
  return fmt::format("not a recipe key{}", guess.empty() ? "" : fmt::format(" (did you mean '{}'?)", guess));
}

// The keys under space:, each a recipe key with its kind of search.
void read_dimensions(const YAML::Node& dims, const std::vector<std::string>& known_keys, SweepSpace& space, Problems& problems) {
  for (const auto& item : dims) {
    const std::string key = item.first.as<std::string>();
    if (std::find(known_keys.begin(), known_keys.end(), key) != known_keys.end()) {
      read_dimension(key, item.second, space, problems);
      continue;
    }
    const bool section = item.second.IsMap() && item.second.size() > 0 && is_recipe_section(key, known_keys);
    problems.add(item.first, key,
                 section ? fmt::format("a recipe section; search its keys dotted, e.g. {}.{}: [...]", key,
                                       item.second.begin()->first.as<std::string>())
                         : not_a_recipe_key(key, known_keys));
  }
}

// metric and mode (the direction: min for a metric named *loss*, else max), and the sampler.
void read_objective(const YAML::Node& root, SweepSpace& space, Problems& problems) {
  if (root["metric"] && root["metric"].IsMap())
    problems.add(root["metric"], "metric", "is one name here (metric: top1), and W&B's goal is mode: max or min beside it");
  else
    read_scalar(root, "metric", space.metric, problems);
  space.maximize = space.metric.find("loss") == std::string::npos;
  if (root["mode"]) {
    const std::string mode = root["mode"].as<std::string>("");
    if (mode == "max" || mode == "min")
      space.maximize = mode == "max";
    else
      problems.add(root["mode"], "mode", fmt::format("'{}' is not max or min{}", mode, foreign_word(mode)));
  }
  if (root["sampler"]) {
    const std::string sampler = root["sampler"].as<std::string>("");
    if (sampler == "grid") space.sampler = SweepSampler::kGrid;
    else if (sampler == "random") space.sampler = SweepSampler::kRandom;
    else if (sampler == "tpe") space.sampler = SweepSampler::kTpe;
    else
      problems.add(root["sampler"], "sampler", fmt::format("'{}' is not grid, random or tpe{}", sampler, foreign_word(sampler)));
  }
}

// early_stopping: {grace, reduction}: ASHA's rungs.
void read_early_stopping(const YAML::Node& stopping, SweepSpace& space, Problems& problems) {
  if (!stopping.IsMap() || !stopping["grace"]) {
    problems.add(stopping, "early_stopping", "expected {grace: EPOCHS, reduction: FACTOR} (ASHA)");
    return;
  }
  read_scalar(stopping, "grace", space.grace_epochs, problems);
  read_scalar(stopping, "reduction", space.reduction, problems);
  if (space.grace_epochs < 1)
    problems.add(stopping["grace"], "early_stopping.grace", fmt::format("must be at least 1 epoch, got {}", space.grace_epochs));
  if (space.reduction < 2)
    problems.add(node_or_root(stopping, "reduction"), "early_stopping.reduction",
                 fmt::format("must be at least 2, got {}", space.reduction));
  for (const auto& item : stopping)
    if (item.first.as<std::string>() != "grace" && item.first.as<std::string>() != "reduction")
      problems.add(item.first, "early_stopping." + item.first.as<std::string>(), "not a key of early_stopping (grace, reduction)");
}

// trials, parallel, seed, gpus_per_trial, and what the sampler can search.
void read_budget(const YAML::Node& root, SweepSpace& space, Problems& problems) {
  read_scalar(root, "trials", space.trials, problems);
  read_scalar(root, "parallel", space.parallel, problems);
  read_scalar(root, "seed", space.seed, problems);
  read_scalar(root, "gpus_per_trial", space.gpus_per_trial, problems);
  if (space.trials < 0 || (space.trials == 0 && space.sampler != SweepSampler::kGrid))
    problems.add(node_or_root(root, "trials"), "trials", fmt::format("{} trials; give at least 1 (0, the whole grid, only with sampler: grid)", space.trials));
  if (space.parallel < 1) problems.add(node_or_root(root, "parallel"), "parallel", fmt::format("must be at least 1, got {}", space.parallel));
  if (space.gpus_per_trial < 1) problems.add(node_or_root(root, "gpus_per_trial"), "gpus_per_trial", fmt::format("must be at least 1, got {}", space.gpus_per_trial));
}

// Sets each `sweep.KEY=VALUE` into `root` (the loaded map): space.RECIPE.KEY as one key
// under space: (recipe keys hold dots), others as nested maps (early_stopping.grace). Returns the
// keys as messages name them, with their overrides.
std::map<std::string, std::string> apply_overrides(YAML::Node& root, const std::vector<std::string>& overrides) {
  std::map<std::string, std::string> overridden;
  std::vector<std::string> problems;
  for (const std::string& text : overrides) {
    const size_t eq = text.find('=');
    const std::string key = text.substr(std::string(kSweepOverridePrefix).size(),
                                        eq == std::string::npos ? std::string::npos : eq - std::string(kSweepOverridePrefix).size());
    YAML::Node value;
    try {
      if (eq == std::string::npos || key.empty()) throw YAML::Exception(YAML::Mark::null_mark(), "expected sweep.KEY=VALUE");
      value = YAML::Load(text.substr(eq + 1));
    } catch (const YAML::Exception& e) {
      problems.push_back(fmt::format("override '{}': {}", text, e.msg));
      continue;
    }
    if (key.rfind("space.", 0) == 0) {
      const std::string recipe_key = key.substr(6);
      root["space"][recipe_key] = value;
      overridden[recipe_key] = text;
      continue;
    }
    YAML::Node at = root;
    size_t from = 0;
    for (size_t dot = key.find('.'); dot != std::string::npos; from = dot + 1, dot = key.find('.', from)) {
      const std::string part = key.substr(from, dot - from);
      if (!at[part] || !at[part].IsMap()) at[part] = YAML::Node(YAML::NodeType::Map);
      at.reset(at[part]);
    }
    at[key.substr(from)] = value;
    overridden[key] = text;
  }
  if (!problems.empty()) throw RecipeError(problems);
  return overridden;
}

// The space from its YAML map (a file's root or a recipe's `sweep:`) and the sweep.* overrides;
// `where` names it in messages.
SweepSpace space_from_node(const YAML::Node& root, const std::string& path, const std::string& where,
                           const std::vector<std::string>& known_keys, const std::vector<std::string>& overrides) {
  if (!root.IsMap())
    throw RecipeError({fmt::format("{}: {} must be a map with space:, metric:, sampler:, trials:, parallel:", path, where)});
  // The overrides go into the loaded tree itself (a copy would lose the file's lines); reads below
  // stay on the const node, so that looking a key up never adds it.
  YAML::Node editable = root;
  Problems problems{path, {}, apply_overrides(editable, overrides)};
  SweepSpace space;
  space.file = path;
  space.text = yaml_text(root);
  const bool misplaced = check_top_keys(root, known_keys, problems);
  const YAML::Node dims = root["space"];
  if (dims && dims.IsMap() && dims.size() > 0)
    read_dimensions(dims, known_keys, space, problems);
  else if (dims || !misplaced)  // recipe keys at the top already say where they belong
    problems.add(dims ? dims : root, "space", "needs at least one recipe key to search, e.g. optim.lr: {loguniform: [1.0e-4, 1.0e-1]}");
  read_objective(root, space, problems);
  read_budget(root, space, problems);
  if (const YAML::Node stopping = root["early_stopping"]) read_early_stopping(stopping, space, problems);
  if (space.sampler == SweepSampler::kGrid)
    for (const SearchDimension& d : space.dimensions)
      if (d.kind != SearchDimension::Kind::kChoice)
        problems.add(dims[d.key], d.key, "sampler: grid searches lists of values only; give {grid: [...]} or use random or tpe");
  if (!problems.list.empty()) throw RecipeError(problems.list);
  return space;
}

}  // namespace

bool is_sweep_override(const std::string& text) { return text.rfind(kSweepOverridePrefix, 0) == 0; }

SweepSpace load_sweep_space(const std::string& path, const std::vector<std::string>& known_keys,
                            const std::vector<std::string>& overrides) {
  const YAML::Node root = load_yaml_file(path, "search space file");  // const: looking a key up never adds it
  return space_from_node(root, path, "a search space file", known_keys, overrides);
}

std::optional<SweepSpace> recipe_sweep_section(const std::string& recipe_path, const std::vector<std::string>& known_keys,
                                               const std::vector<std::string>& overrides) {
  // The nearest file of the base: chain with a sweep: section holds the space, whole: a search
  // space is one design, not merged key by key as the recipe is.
  std::string file = recipe_path;
  for (int depth = 0; depth < kMaxBaseDepth; ++depth) {
    const YAML::Node root = load_yaml_file(file, "recipe file");
    if (!root.IsMap()) return std::nullopt;
    if (const YAML::Node section = root["sweep"]) return space_from_node(section, file, "its sweep: section", known_keys, overrides);
    const YAML::Node base = root["base"];
    if (!base || !base.IsScalar()) return std::nullopt;
    file = (fs::path(file).parent_path() / base.Scalar()).string();
    if (!fs::is_regular_file(file)) return std::nullopt;  // loading the recipe names a missing base
  }
  return std::nullopt;  // a base: chain this deep is a cycle, which loading the recipe names
}

SweepSpace load_recipe_sweep_section(const std::string& recipe_path, const std::vector<std::string>& known_keys,
                                     const std::vector<std::string>& overrides) {
  if (std::optional<SweepSpace> space = recipe_sweep_section(recipe_path, known_keys, overrides)) return *space;
  // A sweep given wholly on the command line: sweep.space.KEY=... sweep.trials=...
  if (!overrides.empty())
    return space_from_node(YAML::Node(YAML::NodeType::Map), recipe_path, "its sweep.* overrides", known_keys, overrides);
  throw RecipeError(
      {fmt::format("{}: the recipe has no sweep: section; add one (see docs/sweeps.md), give --space FILE, or give the space as "
                   "overrides: sweep.space.optim.lr=[0.05,0.1,0.2] sweep.trials=3",
                   recipe_path)});
}

const char* sampler_name(SweepSampler sampler) {
  switch (sampler) {
    case SweepSampler::kGrid: return "grid";
    case SweepSampler::kRandom: return "random";
    case SweepSampler::kTpe: return "tpe";
  }
  return "?";
}

std::string describe_space(const SweepSpace& s) {
  std::vector<std::string> keys;
  for (const SearchDimension& d : s.dimensions) keys.push_back(d.key);
  const std::string trials = s.sampler == SweepSampler::kGrid && s.trials == 0 ? "the whole grid" : fmt::format("{} trials", s.trials);
  return fmt::format("{} over {}, {}, {} at a time, {} ({}){}", sampler_name(s.sampler), join(keys, ", "), trials, s.parallel, s.metric,
                     s.maximize ? "max" : "min",
                     s.grace_epochs > 0 ? fmt::format(", ASHA from epoch {} by {}", s.grace_epochs, s.reduction) : "");
}

}  // namespace cvtrain
