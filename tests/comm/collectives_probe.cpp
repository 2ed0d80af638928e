// A rank program for the collectives tests: joins the group described by torchrun's variables,
// checks all-reduce (blocking and overlapped), broadcast and barrier, exits 0 when all hold.
#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>

#include "cvtrain/comm/communicator.h"
#include "cvtrain/launch/rank_environment.h"

int main() {
  try {
    const auto info = cvtrain::rank_from_environment(cvtrain::process_environment());
    if (!info) {
      std::fprintf(stderr, "collectives_probe: run me under a launcher\n");
      return 2;
    }
    cvtrain::GroupSpec spec{info->rank, info->world_size, info->master_addr, info->master_port, "gloo",
                            std::chrono::seconds(std::getenv("PROBE_TIMEOUT_S") ? std::atoi(std::getenv("PROBE_TIMEOUT_S")) : 60)};
    auto comm = cvtrain::connect(spec);
    const int w = comm->world_size(), r = comm->rank();
    at::Tensor sum = at::full({1000}, static_cast<float>(r + 1));
    at::Tensor other = at::full({10}, static_cast<double>(r));
    auto pending = comm->all_reduce_sum_async(sum, "probe sum");  // two collectives in flight at once
    auto pending_other = comm->all_reduce_sum_async(other, "probe other");
    pending->wait();
    pending_other->wait();
    at::Tensor root_value = at::full({3}, static_cast<float>(r * 10 + 7));
    comm->broadcast(root_value, w - 1, "probe broadcast");
    comm->barrier("probe barrier");
    const bool ok = sum.eq(w * (w + 1) / 2.0f).all().item<bool>() && other.eq(w * (w - 1) / 2.0).all().item<bool>() &&
                    root_value.eq((w - 1) * 10 + 7.0f).all().item<bool>();
    std::printf("%s rank %d of %d\n", ok ? "collectives ok" : "collectives WRONG", r, w);
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collectives_probe: %s\n", e.what());
    return 1;
  }
}
