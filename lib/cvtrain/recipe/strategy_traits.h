// What each strategy is, in one table beside the architectures' (models/arch_traits.h): what it
// shards, how it overlaps communication, what it rules out. The recipe checks, the step's graph,
// the profiler's advice and the process group ask it instead of comparing names.
#pragma once

#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

struct StrategyTraits {
  StrategyKind kind = StrategyKind::kSingle;
  bool one_process = false;               // single: no process group at all
  bool updates_flat_shards = false;       // zero1/zero2/fsdp: each rank updates a flat shard that cuts across parameters and layers
  bool overlaps_in_buckets = false;       // ddp/zero1: gradients reduced per distributed.bucket_mb bucket while backward runs
  const char* gathers_in_step = nullptr;  // fsdp: why a graph's fixed addresses or a plain forward/backward cannot follow it
};

// The row for a resolved strategy (never auto: resolve_strategy first).
const StrategyTraits& strategy_traits(StrategyKind kind);

// strategy: auto is ddp on several ranks and single on one.
StrategyKind resolve_strategy(StrategyKind written, int world_size);

}  // namespace cvtrain
