// Collectives between ranks, over PyTorch's c10d: TCPStore rendezvous, ProcessGroupGloo on CPU,
// ProcessGroupNCCL on CUDA. A world of one uses a communicator that does nothing.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "cvtrain/core/step_phase.h"

namespace at {
class Tensor;
}

namespace cvtrain {

struct GroupSpec {
  int rank = 0;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string backend = "gloo";  // gloo | nccl
  std::chrono::seconds timeout{600};
  bool group_of_one = false;  // a real process group even for world size 1 (to exercise NCCL or Gloo)
  bool store_exists = false;  // the launcher serves the store already: rank 0 connects as a client
  int attempt = 0;            // keys are namespaced per attempt, so a restarted group ignores old ones
};

// A collective in flight; wait() returns once its result is in the output tensor (on a GPU: once
// the current stream is ordered after it). Its tensors stay alive until then.
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual std::string backend() const = 0;
  // Sum over ranks, in place. `what` names the collective in errors: a failure or a timeout
  // (GroupSpec::timeout) throws Error naming it, this rank, the world and the backend's reason.
  virtual std::unique_ptr<PendingCollective> all_reduce_sum_async(at::Tensor& tensor, const std::string& what) = 0;
  void all_reduce_sum(at::Tensor& tensor, const std::string& what) { all_reduce_sum_async(tensor, what)->wait(); }
  virtual void broadcast(at::Tensor& tensor, int root, const std::string& what) = 0;
  // full [world x n] <- every rank's shard [n], in rank order.
  virtual std::unique_ptr<PendingCollective> all_gather_async(at::Tensor& full, const at::Tensor& shard, const std::string& what) = 0;
  void all_gather(at::Tensor& full, const at::Tensor& shard, const std::string& what) { all_gather_async(full, shard, what)->wait(); }
  // shard [n] <- this rank's part of the sum over ranks of full [world x n].
  virtual std::unique_ptr<PendingCollective> reduce_scatter_sum_async(at::Tensor& shard, const at::Tensor& full,
                                                                      const std::string& what) = 0;
  virtual void barrier(const std::string& what) = 0;
};

// Joins the group; throws Error naming the address and the ranks that never arrived on timeout.
// A world of one gets single_process_communicator() unless spec.group_of_one.
std::unique_ptr<Communicator> connect(const GroupSpec& spec);
std::unique_ptr<Communicator> single_process_communicator();

// Called with the collective before every blocking wait on one (on Gloo the host waits there; on
// NCCL a wait only orders the stream) and with Collective::kNone once it is over: the trainer points
// it at the launcher's hang watch, which then names what a stuck rank's peers wait in. One per
// process; nullptr (the default) for none.
using CollectiveWaitListener = void (*)(Collective);
void set_collective_wait_listener(CollectiveWaitListener listener);

// The NCCL library's version ("2.27.3"), or "none" without NCCL.
std::string nccl_version();

}  // namespace cvtrain
