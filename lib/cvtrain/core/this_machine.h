// Facts about this machine that messages and files name: its host name and the UTC time.
#pragma once

#include <string>

namespace cvtrain {

// gethostname(2), or "unknown".
std::string host_name();

// Now, as 2026-12-02T08:02:20Z.
std::string utc_now();

}  // namespace cvtrain
