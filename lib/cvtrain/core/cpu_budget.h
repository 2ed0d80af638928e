// The CPUs this process may use: its affinity mask, which taskset, a container's cpuset and
// Slurm's task binding narrow, not the machine's count (std::thread::hardware_concurrency), which
// would oversubscribe a job given 12 CPUs of a 128-core node; and the CPU time it has used, so a
// benchmark can say how many cores it kept busy.
#pragma once

#include <cstdint>

namespace cvtrain {

// At least 1; hardware_concurrency() where the mask cannot be read.
unsigned usable_cpus();

// CPU seconds this process (all its threads) has used so far: user and system.
double process_cpu_seconds();

// data.workers: auto for a rank given `cores_per_rank` cores: on a GPU all but the one its
// training thread takes, on a CPU half (training computes on the same cores); at least 1, at most
// `most`.
int64_t automatic_workers(unsigned cores_per_rank, bool on_gpu, int64_t most);

}  // namespace cvtrain
