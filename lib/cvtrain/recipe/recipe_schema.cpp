// The recipe's schema: YAML values converted to typed members with a message on mismatch, one
// Field per key that reads, checks and prints it, and the resolved recipe written back as YAML.
#include "cvtrain/recipe/recipe_schema.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <stdexcept>
#include <type_traits>

#include "cvtrain/core/text.h"
#include "cvtrain/recipe/key_hints.h"

namespace cvtrain {
namespace {

using MaybeError = std::optional<std::string>;

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

MaybeError convert(const YAML::Node& n, WorkerCount& out) {
  if (n.IsScalar() && n.Scalar() == "auto") {
    out = WorkerCount{};
    return std::nullopt;
  }
  int64_t count = 0;
  if (convert(n, count) || count < 0 || count > 256)
    return fmt::format("expected auto (this rank's share of the node's cores) or a number of threads in [0, 256], got {}",
                       n.IsScalar() ? "'" + n.Scalar() + "'" : std::string("a list or map"));
  out = WorkerCount::exactly(count);
  return std::nullopt;
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

// A map of names to values ({team: vision}); null or {} clears what a base recipe set.
MaybeError convert(const YAML::Node& n, std::map<std::string, std::string>& out) {
  out.clear();
  if (n.IsNull()) return std::nullopt;
  if (!n.IsMap())
    return fmt::format("expected a map of names to values, e.g. {{team: vision}}, got {}",
                       n.IsScalar() ? "'" + n.Scalar() + "'" : "a list");
  for (const auto& item : n) {
    if (!item.second.IsScalar()) return fmt::format("'{}': expected a single value, got a list or map", item.first.Scalar());
    out[item.first.Scalar()] = item.second.Scalar();
  }
  return std::nullopt;
}

// Names to numbers ({decode_head: 10}); null or {} clears what a base recipe set.
MaybeError convert(const YAML::Node& n, std::map<std::string, double>& out) {
  out.clear();
  if (n.IsNull()) return std::nullopt;
  if (!n.IsMap())
    return fmt::format("expected a map of names to numbers, e.g. {{decode_head: 10}}, got {}",
                       n.IsScalar() ? "'" + n.Scalar() + "'" : "a list");
  for (const auto& item : n) {
    double value = 0;
    const std::string& name = item.first.Scalar();
    // YAML reads {decode_head:10} as one key "decode_head:10" without a value: a colon needs a space.
    if (item.second.IsNull() && name.find(':') != std::string::npos)
      return fmt::format("'{}' has no value: YAML needs a space after the colon, {{{}: {}}}", name, name.substr(0, name.find(':')),
                         name.substr(name.find(':') + 1));
    if (auto e = convert(item.second, value)) return fmt::format("'{}': {}", name, *e);
    out[item.first.Scalar()] = value;
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
  } else if constexpr (std::is_same_v<T, WorkerCount>) {
    return value.automatic ? YAML::Node("auto") : YAML::Node(value.count);
  } else if constexpr (std::is_same_v<T, FlipChance>) {  // true and false as recipes have always said them
    return value.p == 0.5 ? YAML::Node(true) : value.p == 0 ? YAML::Node(false) : to_node(value.p);
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    YAML::Node node(YAML::NodeType::Sequence);
    for (const std::string& v : value) node.push_back(v);
    node.SetStyle(YAML::EmitterStyle::Flow);
    return node;
  } else if constexpr (std::is_same_v<T, std::map<std::string, std::string>>) {
    YAML::Node node(YAML::NodeType::Map);
    for (const auto& [key, v] : value) node[key] = v;
    node.SetStyle(YAML::EmitterStyle::Flow);
    return node;
  } else if constexpr (std::is_same_v<T, std::map<std::string, double>>) {
    YAML::Node node(YAML::NodeType::Map);
    for (const auto& [key, v] : value) node[key] = to_node(v);
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
  MaybeError operator()(const T&) const {
    return std::nullopt;
  }
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

// track.mlflow.uri: the server's address, never its credentials (a recipe is copied into every run
// folder and checkpoint; user:password@ would travel with it).
MaybeError tracking_uri(const std::string& v) {
  if (v.empty() || v == "off") return std::nullopt;
  if (v.rfind("http://", 0) != 0 && v.rfind("https://", 0) != 0)
    return fmt::format(
        "expected the tracking server's http:// or https:// address (cvtrain speaks MLflow's REST API), "
        "'off', or nothing for MLFLOW_TRACKING_URI, got '{}'",
        v);
  const size_t host = v.find("://") + 3;
  const size_t at = v.find('@', host);
  if (at != std::string::npos && at < v.find('/', host))
    return std::string(
        "credentials do not belong in a recipe: give the address without user:password@ and set "
        "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD (or MLFLOW_TRACKING_TOKEN)");
  return std::nullopt;
}

// `KEY(train.epochs)` spells the recipe key and the struct member once: they are the same path.
#define KEY(member) \
#member, [](Recipe & r) -> auto& { return r.member; }

const std::vector<Field>& schema() {
  static const std::vector<Field> fields = {
      field(KEY(task)),
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
      field(KEY(data.workers)),
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
      field(KEY(data.ignore_index), in_range(0, 255)),
      field(KEY(data.reduce_zero_label)),
      field(KEY(data.eval_mode)),
      field(KEY(data.eval_window)),
      field(KEY(data.eval_stride)),
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
      field(KEY(augment.crop_size)),
      field(KEY(augment.scale)),
      field(KEY(augment.ratio_range)),
      field(KEY(augment.cat_max_ratio), in_range(0.01, 1)),
      field(KEY(augment.photometric)),
      field(KEY(train.ema.decay),
            [](double v) -> MaybeError {
              if (v >= 0 && v < 1) return std::nullopt;
              return fmt::format("must be in [0, 1) (0 = off), got {}", v);
            }),
      field(KEY(train.ema.warmup)),
      field(KEY(train.ema.every_steps), at_least(1)),
      field(KEY(train.loss)),
      field(KEY(train.bce_target_threshold), in_range(0, 1)),
      field(KEY(train.aux_loss_weight), in_range(0, 10)),
      field(KEY(train.eval_every), at_least(1)),
      field(KEY(train.class_weights)),
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
      field(KEY(optim.lr_mult)),
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
      field(KEY(schedule.power), in_range(0.01, 10)),
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
      field(KEY(track.mlflow.uri), tracking_uri),
      field(KEY(track.mlflow.experiment)),
      field(KEY(track.mlflow.run_name)),
      field(KEY(track.mlflow.tags)),
      field(KEY(track.mlflow.log_weights)),
      field(KEY(preflight)),
      field(KEY(output)),
  };
  return fields;
}
#undef KEY

const Field* field_of(const std::string& key) {
  static const std::map<std::string, const Field*> by_path = [] {
    std::map<std::string, const Field*> index;
    for (const Field& f : schema()) index[f.path] = &f;
    return index;
  }();
  const auto it = by_path.find(key);
  return it == by_path.end() ? nullptr : it->second;
}

}  // namespace

std::vector<std::string> recipe_keys() {
  std::vector<std::string> keys;
  for (const auto& f : schema()) keys.push_back(f.path);
  return keys;
}

bool is_recipe_key(const std::string& key) { return field_of(key) != nullptr; }

std::optional<std::string> read_recipe_key(const std::string& key, const YAML::Node& value, Recipe& recipe) {
  const Field* field = field_of(key);
  if (!field) return "not a recipe key";
  return field->read(value, recipe);
}

std::optional<std::string> value_problem(const std::string& key, const std::string& value) {
  try {
    Recipe scratch;
    return read_recipe_key(key, YAML::Load(value), scratch);
  } catch (const YAML::Exception& e) {
    return "cannot parse the value: " + e.msg;
  }
}

std::vector<std::pair<std::string, std::string>> recipe_values(const Recipe& recipe) {
  std::vector<std::pair<std::string, std::string>> values;
  for (const auto& f : schema()) {
    const YAML::Node node = f.render(recipe);
    if (node.IsScalar()) {
      values.emplace_back(f.path, node.Scalar());
      continue;
    }
    YAML::Emitter out;
    out << node;
    values.emplace_back(f.path, out.c_str());
  }
  if (recipe.train.micro_batch_auto)
    for (auto& [key, value] : values)
      if (key == "train.micro_batch") value = "auto";
  return values;
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
