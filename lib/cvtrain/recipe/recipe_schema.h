// Every recipe key in one table: its type, its check of a single value, its default (recipe.h's
// member) and how it prints. recipe_loader.cpp feeds it the keys of files and overrides.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cvtrain/recipe/recipe.h"

namespace YAML {
class Node;
}

namespace cvtrain {

// Every recipe key, dotted ("train.epochs"), in schema order.
std::vector<std::string> recipe_keys();
bool is_recipe_key(const std::string& key);

// Reads `value` into the member of `recipe` that `key` (one of recipe_keys()) names: nullopt when it
// reads, else what is wrong with it (type, range, choice; no rule across keys).
std::optional<std::string> read_recipe_key(const std::string& key, const YAML::Node& value, Recipe& recipe);

// What is wrong with `value` (YAML text, as after KEY= in an override) for the recipe key `key`, by
// its schema row alone; nullopt when it reads.
std::optional<std::string> value_problem(const std::string& key, const std::string& value);

// Every key of the resolved recipe with its value as YAML spells it ("64", "[0.5, 0.5]"), in schema
// order: what experiment trackers take as a run's parameters.
std::vector<std::pair<std::string, std::string>> recipe_values(const Recipe& recipe);

// The resolved recipe as YAML, every key present (what `cvtrain check` prints and runs save).
std::string recipe_to_yaml(const Recipe& recipe);

}  // namespace cvtrain
