// Peaks in MB above the memory at start, one slot per rank, summed across ranks.
#include "cvtrain/train/memory_report.h"

#include <ATen/ATen.h>

#include "cvtrain/comm/communicator.h"
#include "cvtrain/launch/rank_environment.h"
#include "cvtrain/observe/memory.h"
#include "cvtrain/parallel/strategy.h"
#include "cvtrain/train/run_builder.h"

namespace cvtrain {

MemoryReport gather_memory_report(const TrainingRun& run, const RankInfo& rank) {
  const StateBytes held = run.strategy->state_bytes(*run.optimizer);
  at::Tensor peaks = at::zeros({rank.world_size}, at::TensorOptions(run.device).dtype(at::kDouble));
  peaks[rank.rank].fill_(static_cast<double>(peak_memory_bytes(run.device) - run.memory_at_start) / 1e6);
  if (rank.world_size > 1) run.comm->all_reduce_sum(peaks, "memory report all-reduce");
  const at::Tensor host = peaks.cpu();
  return MemoryReport{static_cast<double>(held.parameters) / 1e6, static_cast<double>(held.optimizer_state) / 1e6,
                      std::vector<double>(host.data_ptr<double>(), host.data_ptr<double>() + rank.world_size), run.device.is_cuda()};
}

}  // namespace cvtrain
