// The phases of a training step and the collectives a rank can wait in: the vocabulary shared by
// the step's timer, the profiler (observe/step_phases.h), the communicator (comm/) and the
// progress reports to the launcher's hang watch (launch/heartbeat.h).
#pragma once

#include <array>
#include <cstddef>

namespace cvtrain {

// In the order a step goes through them. kComm is communication left exposed (a rank waiting
// for it, not the part overlapped with backward); kOther is what lies between steps: logging,
// checkpoints.
enum class Phase { kData, kCopy, kForward, kBackward, kComm, kOptimizer, kOther };
inline constexpr size_t kPhaseCount = 7;
// The names in metrics.jsonl, perf_summary.json and the log lines.
inline constexpr std::array<const char*, kPhaseCount> kPhaseNames{"data", "copy", "forward", "backward", "comm", "optimizer", "other"};
inline const char* phase_name(Phase p) { return kPhaseNames[static_cast<size_t>(p)]; }

// The collective a rank is blocked in, if any: what the hang watch says the others wait in.
enum class Collective { kNone, kAllReduce, kAllGather, kReduceScatter, kBroadcast, kBarrier };
inline constexpr size_t kCollectiveCount = 6;
inline constexpr std::array<const char*, kCollectiveCount> kCollectiveNames{"", "all-reduce", "all-gather", "reduce-scatter", "broadcast",
                                                                            "barrier"};

}  // namespace cvtrain
