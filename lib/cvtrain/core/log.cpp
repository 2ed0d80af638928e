// Log lines go to stderr, whole lines at a time, so output of parallel threads never interleaves.
#include "cvtrain/core/log.h"

#include <cstdio>
#include <mutex>

namespace cvtrain::log {

void write(Level level, std::string_view message) {
  static std::mutex mutex;
  const char* tag = level == Level::kInfo ? "" : level == Level::kWarn ? "warning: " : "error: ";
  std::lock_guard<std::mutex> lock(mutex);
  std::fprintf(stderr, "[cvtrain] %s%.*s\n", tag, static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
}

}  // namespace cvtrain::log
