// Facts about this machine that messages and files name: its host name, CPU and the UTC time.
#pragma once

#include <string>

namespace cvtrain {

// gethostname(2), or "unknown".
std::string host_name();

// Now, as 2026-12-02T08:02:20Z.
std::string utc_now();

// The CPU's model name from /proc/cpuinfo ("AMD EPYC 9654 96-Core Processor"), or "unknown".
std::string cpu_model();

}  // namespace cvtrain
