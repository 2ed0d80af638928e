// The test aids of fault_injection.h.
#include "cvtrain/train/fault_injection.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "cvtrain/core/log.h"
#include "cvtrain/launch/stop_request.h"

namespace cvtrain {
namespace {

bool step_in_range(const char* variable, int64_t step) {
  const char* range = std::getenv(variable);
  long long first = 0, last = 0;
  return range && std::sscanf(range, "%lld-%lld", &first, &last) == 2 && step >= first && step <= last;
}

bool rank_and_step(const char* rank_variable, const char* step_variable, int rank, int64_t step) {
  const char* r = std::getenv(rank_variable);
  const char* s = std::getenv(step_variable);
  return r && s && std::atoi(r) == rank && std::atoll(s) == step;
}

}  // namespace

// Megabytes written to (so that they count in the resident set) and never given back.
static void leak_memory() {
  static const char* per_step = std::getenv("CVTRAIN_LEAK_MB_PER_STEP");
  static std::vector<std::vector<char>> kept;
  if (per_step) kept.emplace_back(static_cast<size_t>(std::atof(per_step) * (1 << 20)), '\1');
}

void inject_rank_fault(int rank, int attempt, int64_t step) {
  leak_memory();
  if (attempt != 0) return;
  if (rank_and_step("CVTRAIN_FAULT_RANK", "CVTRAIN_FAULT_STEP", rank, step)) {
    log::error("rank {}: injected fault after step {} (CVTRAIN_FAULT_STEP)", rank, step);
    std::_Exit(3);
  }
  if (rank_and_step("CVTRAIN_HANG_RANK", "CVTRAIN_HANG_STEP", rank, step)) {
    log::error("rank {}: injected hang after step {} (CVTRAIN_HANG_STEP)", rank, step);
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

void inject_stop_request(int64_t step) {
  const char* at = std::getenv("CVTRAIN_STOP_AT_STEP");
  if (at && std::atoll(at) == step) request_stop(SIGTERM);
}

bool non_finite_injection_configured() { return std::getenv("CVTRAIN_NAN_STEPS") || std::getenv("CVTRAIN_INF_GRAD_STEPS"); }

bool graph_body_on_cpu_requested() {
  const char* value = std::getenv("CVTRAIN_GRAPH_BODY_ON_CPU");
  return value && std::string(value) == "1";
}

NonFiniteFactors non_finite_factors(int64_t step) {
  constexpr double kNan = std::numeric_limits<double>::quiet_NaN(), kInf = std::numeric_limits<double>::infinity();
  if (step_in_range("CVTRAIN_NAN_STEPS", step)) return {kNan, kNan};
  if (step_in_range("CVTRAIN_INF_GRAD_STEPS", step)) return {1, kInf};
  return {};
}

}  // namespace cvtrain
