// The strategies' table (see strategy_traits.h).
#include "cvtrain/recipe/strategy_traits.h"

#include <array>
#include "cvtrain/core/error.h"

namespace cvtrain {
namespace {

constexpr const char* kFsdpGathers = "fsdp gathers and frees each block's parameters inside the step";

constexpr std::array<StrategyTraits, 5> kTraits{{
    {StrategyKind::kSingle, true, false, false, nullptr},
    {StrategyKind::kDdp, false, false, true, nullptr},
    {StrategyKind::kZero1, false, true, true, nullptr},
    {StrategyKind::kZero2, false, true, false, nullptr},
    {StrategyKind::kFsdp, false, true, false, kFsdpGathers},
}};

}  // namespace

const StrategyTraits& strategy_traits(StrategyKind kind) {
  for (const StrategyTraits& traits : kTraits)
    if (traits.kind == kind) return traits;
  throw Error("strategy auto asked for its traits before it was resolved for the job's world size");
}

StrategyKind resolve_strategy(StrategyKind written, int world_size) {
  if (written != StrategyKind::kAuto) return written;
  return world_size > 1 ? StrategyKind::kDdp : StrategyKind::kSingle;
}

}  // namespace cvtrain
