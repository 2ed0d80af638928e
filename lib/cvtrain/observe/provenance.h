// provenance.json: where and how a run ran (command, versions, hosts, device), written by rank 0
// when training starts so that a report, or a person, can tell runs apart later. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cvtrain/core/this_machine.h"  // utc_now, which provenance records

namespace cvtrain {

struct Provenance {
  std::string started_at;  // UTC, ISO 8601
  std::string command;     // this process's command line
  std::string working_directory;
  std::string cvtrain_version, libtorch_version, cuda_runtime, nccl_version;
  std::string device;  // "NVIDIA H200", "cpu"
  int world_size = 1;
  std::vector<std::string> ranks;  // rank_label() of every rank
  unsigned cores = 0;              // what rank 0's node gives the job's ranks there (0: not known)
  int64_t data_workers = 0;        // decode threads per rank, data.workers: auto resolved
  std::vector<std::pair<std::string, std::string>> plan;  // the run plan's rows (recipe/run_plan.h), in order
};

// The fields every process knows about itself: time, command line, directory, cvtrain's version.
Provenance this_process_provenance();
std::string provenance_json(const Provenance& p);

}  // namespace cvtrain
