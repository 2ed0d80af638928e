// host_name and utc_now (this_machine.h).
#include "cvtrain/core/this_machine.h"

#include <unistd.h>

#include <ctime>

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

}  // namespace cvtrain
