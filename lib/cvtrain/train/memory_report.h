// The memory figures of the epoch line: what this rank's strategy holds (parameters, optimizer
// state) and every rank's peak since the run started, gathered in one all-reduce.
#pragma once

#include "cvtrain/observe/metric_records.h"

namespace cvtrain {

struct RankInfo;
struct TrainingRun;

// Collective: every rank calls it at the same point.
MemoryReport gather_memory_report(const TrainingRun& run, const RankInfo& rank);

}  // namespace cvtrain
