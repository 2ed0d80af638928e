// Minimal levelled logging to stderr through fmt; every line says it came from cvtrain.
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace cvtrain::log {

enum class Level { kInfo, kWarn, kError };
void write(Level level, std::string_view message);

template <class... Args>
void info(fmt::format_string<Args...> format, Args&&... args) {
  write(Level::kInfo, fmt::format(format, std::forward<Args>(args)...));
}
template <class... Args>
void warn(fmt::format_string<Args...> format, Args&&... args) {
  write(Level::kWarn, fmt::format(format, std::forward<Args>(args)...));
}
template <class... Args>
void error(fmt::format_string<Args...> format, Args&&... args) {
  write(Level::kError, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace cvtrain::log
