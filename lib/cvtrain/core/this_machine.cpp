// host_name and utc_now (this_machine.h).
#include "cvtrain/core/this_machine.h"

#include <unistd.h>

#include <ctime>
#include <fstream>

namespace cvtrain {

std::string host_name() {
  char host[256] = {};
  return gethostname(host, sizeof host - 1) == 0 ? std::string(host) : std::string("unknown");
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string cpu_model() {
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    const size_t start = line.find_first_not_of(' ', colon + 1);
    if (colon != std::string::npos && start != std::string::npos) return line.substr(start);
  }
  return "unknown";
}

}  // namespace cvtrain
