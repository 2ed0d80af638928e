// An environment for the launch tests: the variables given, nothing else.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "cvtrain/launch/rank_environment.h"

namespace cvtrain::testing {

inline EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

}  // namespace cvtrain::testing
