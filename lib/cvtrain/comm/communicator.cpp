// c10d communicators. The rendezvous is cvtrain's own on top of TCPStore: every rank announces
// itself under a key and rank 0 waits for all, so a timeout can say which ranks never came.
#include "cvtrain/comm/communicator.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef CVTRAIN_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <atomic>
#include <cstdlib>
#include <thread>

#include "cvtrain/core/error.h"
#include "cvtrain/core/text.h"
#include "cvtrain/core/timer.h"

namespace cvtrain {
namespace {

std::atomic<CollectiveWaitListener> wait_listener{nullptr};

// Tells the listener, for as long as it lives, that this rank is blocked in `collective`.
class WaitReport {
 public:
  explicit WaitReport(Collective collective) : listener_(wait_listener.load()) {
    if (listener_) listener_(collective);
  }
  ~WaitReport() {
    if (listener_) listener_(Collective::kNone);
  }
  WaitReport(const WaitReport&) = delete;
  WaitReport& operator=(const WaitReport&) = delete;

 private:
  CollectiveWaitListener listener_;
};

// Runs a collective step, turning the backend's failure (a peer gone, a timeout) into an Error
// that says which collective, on which rank, of how many.
template <typename Fn>
auto named(const std::string& what, int rank, int world, const std::string& backend, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const c10::Error& e) {
    throw Error(fmt::format("{} failed on rank {} of {} ({}): {}", what, rank, world, backend, e.what_without_backtrace()));
  } catch (const std::exception& e) {
    throw Error(fmt::format("{} failed on rank {} of {} ({}): {}", what, rank, world, backend, e.what()));
  }
}

class C10dPending : public PendingCollective {
 public:
  C10dPending(Collective kind, c10::intrusive_ptr<c10d::Work> work, std::string what, int rank, int world, std::string backend,
              std::vector<at::Tensor> tensors = {})
      : kind_(kind), work_(std::move(work)), tensors_(std::move(tensors)), what_(std::move(what)), rank_(rank), world_(world),
        backend_(std::move(backend)) {}
  void wait() override {
    const WaitReport waiting(kind_);
    named(what_, rank_, world_, backend_, [&] { work_->wait(); });
  }

 private:
  Collective kind_;
  c10::intrusive_ptr<c10d::Work> work_;
  std::vector<at::Tensor> tensors_;  // the collective's input and output, alive until it is done
  std::string what_;
  int rank_, world_;
  std::string backend_;
};

class C10dCommunicator : public Communicator {
 public:
  C10dCommunicator(c10::intrusive_ptr<c10d::Store> store, c10::intrusive_ptr<c10d::Backend> backend, std::string name)
      : store_(std::move(store)), backend_(std::move(backend)), name_(std::move(name)) {}
  int rank() const override { return backend_->getRank(); }
  int world_size() const override { return backend_->getSize(); }
  std::string backend() const override { return name_; }
  std::unique_ptr<PendingCollective> all_reduce_sum_async(at::Tensor& tensor, const std::string& what) override {
    std::vector<at::Tensor> tensors{tensor};
    auto work = named(what, rank(), world_size(), name_, [&] { return backend_->allreduce(tensors); });
    return std::make_unique<C10dPending>(Collective::kAllReduce, std::move(work), what, rank(), world_size(), name_);
  }
  void broadcast(at::Tensor& tensor, int root, const std::string& what) override {
    std::vector<at::Tensor> tensors{tensor};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    const WaitReport waiting(Collective::kBroadcast);
    named(what, rank(), world_size(), name_, [&] { backend_->broadcast(tensors, options)->wait(); });
  }
  void barrier(const std::string& what) override {
    const WaitReport waiting(Collective::kBarrier);
    named(what, rank(), world_size(), name_, [&] { backend_->barrier()->wait(); });
  }
  std::unique_ptr<PendingCollective> all_gather_async(at::Tensor& full, const at::Tensor& shard, const std::string& what) override {
    at::Tensor input = shard;
    auto work = named(what, rank(), world_size(), name_, [&] { return backend_->_allgather_base(full, input); });
    return std::make_unique<C10dPending>(Collective::kAllGather, std::move(work), what, rank(), world_size(), name_,
                                         std::vector<at::Tensor>{full, input});
  }
  std::unique_ptr<PendingCollective> reduce_scatter_sum_async(at::Tensor& shard, const at::Tensor& full,
                                                              const std::string& what) override {
    at::Tensor input = full;
    auto work = named(what, rank(), world_size(), name_, [&] { return backend_->_reduce_scatter_base(shard, input); });
    return std::make_unique<C10dPending>(Collective::kReduceScatter, std::move(work), what, rank(), world_size(), name_,
                                         std::vector<at::Tensor>{shard, input});
  }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::Backend> backend_;
  std::string name_;
};

class SingleProcess : public Communicator {
  struct Done : PendingCollective {
    void wait() override {}
  };

 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  std::string backend() const override { return "none"; }
  std::unique_ptr<PendingCollective> all_reduce_sum_async(at::Tensor&, const std::string&) override { return std::make_unique<Done>(); }
  void broadcast(at::Tensor&, int, const std::string&) override {}
  void barrier(const std::string&) override {}
  std::unique_ptr<PendingCollective> all_gather_async(at::Tensor& full, const at::Tensor& shard, const std::string&) override {
    full.copy_(shard);
    return std::make_unique<Done>();
  }
  std::unique_ptr<PendingCollective> reduce_scatter_sum_async(at::Tensor& shard, const at::Tensor& full, const std::string&) override {
    shard.copy_(full);
    return std::make_unique<Done>();
  }
};

std::string where(const GroupSpec& spec) { return fmt::format("{}:{}", spec.master_addr, spec.master_port); }

c10::intrusive_ptr<c10d::TCPStore> open_store(const GroupSpec& spec) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(spec.master_port);
  options.isServer = spec.rank == 0 && !spec.store_exists;
  options.numWorkers = static_cast<size_t>(spec.world_size);
  options.waitWorkers = false;
  options.timeout = spec.timeout;
  try {
    return c10::make_intrusive<c10d::TCPStore>(spec.master_addr, options);
  } catch (const std::exception& e) {
    const std::string reason = dynamic_cast<const c10::Error*>(&e) ? static_cast<const c10::Error&>(e).what_without_backtrace() : e.what();
    throw Error(spec.rank == 0 ? fmt::format("rank 0 cannot serve the rendezvous on {}: {}", where(spec), reason)
                               : fmt::format("rank {} cannot reach the rendezvous at {} within {} s (is rank 0 running there?): {}",
                                             spec.rank, where(spec), spec.timeout.count(), reason));
  }
}

// Rank 0 waits for every rank's key, then publishes "ok" or the list of absent ranks.
void rendezvous(c10d::Store& store, const GroupSpec& spec) {
  const std::string kStatusKey = "rendezvous";
  store.set(fmt::format("arrived/{}", spec.rank), "1");
  if (spec.rank != 0) {
    std::vector<uint8_t> status;
    try {
      // Longer than rank 0's own wait, so rank 0's verdict (naming the absent ranks) arrives first.
      store.wait({kStatusKey}, 2 * spec.timeout + std::chrono::seconds(10));
      status = store.get(kStatusKey);
    } catch (const std::exception&) {
      throw Error(fmt::format("rank {}: rendezvous at {} timed out after {} s waiting for rank 0's verdict", spec.rank, where(spec),
                              spec.timeout.count()));
    }
    const std::string text(status.begin(), status.end());
    if (text == "ok") return;
    store.set(fmt::format("read_verdict/{}", spec.rank), "1");
    throw Error(fmt::format("rank {}: rendezvous at {} failed: {}", spec.rank, where(spec), text));
  }
  Stopwatch clock;
  std::vector<std::string> absent;
  for (;;) {
    absent.clear();
    for (int r = 1; r < spec.world_size; ++r)
      if (!store.check({fmt::format("arrived/{}", r)})) absent.push_back(std::to_string(r));
    if (absent.empty() || clock.seconds() > static_cast<double>(spec.timeout.count())) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (absent.empty()) {
    store.set(kStatusKey, "ok");
    return;
  }
  const std::string message = fmt::format("rendezvous at {} timed out after {} s: rank(s) {} of {} never arrived", where(spec),
                                          spec.timeout.count(), join(absent, ", "), spec.world_size);
  store.set(kStatusKey, message);
  // The store lives in this process: stay until the ranks that came have read why (5 s at most).
  Stopwatch linger;
  for (int r = 1; r < spec.world_size && linger.seconds() < 5; ++r) {
    if (std::find(absent.begin(), absent.end(), std::to_string(r)) != absent.end()) continue;
    while (!store.check({fmt::format("read_verdict/{}", r)}) && linger.seconds() < 5)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw Error(message);
}

c10::intrusive_ptr<c10d::Backend> make_gloo(const c10::intrusive_ptr<c10d::Store>& store, const GroupSpec& spec) {
  auto options = c10d::ProcessGroupGloo::Options::create(spec.timeout);
  // One host: loopback always works. Several: the interface named by GLOO_SOCKET_IFNAME (as in
  // PyTorch), else the one this host's name resolves to.
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME")) {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
  } else if (spec.master_addr == "127.0.0.1" || spec.master_addr == "localhost") {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  } else {
    options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, spec.rank, spec.world_size, options);
}

c10::intrusive_ptr<c10d::Backend> make_nccl([[maybe_unused]] const c10::intrusive_ptr<c10d::Store>& store,
                                            [[maybe_unused]] const GroupSpec& spec) {
#ifdef CVTRAIN_WITH_NCCL
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = spec.timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, spec.rank, spec.world_size, options);
#else
  throw Error("distributed.backend: this build has no NCCL (nccl.h was not found at configure time)");
#endif
}

}  // namespace

std::unique_ptr<Communicator> connect(const GroupSpec& spec) {
  if (spec.world_size == 1 && !spec.group_of_one) return single_process_communicator();
  auto store = open_store(spec);
  const std::string attempt = fmt::format("cvtrain/attempt{}", spec.attempt);
  rendezvous(*c10::make_intrusive<c10d::PrefixStore>(attempt, store), spec);
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>(attempt + "/default_pg", store);
  auto backend = spec.backend == "nccl" ? make_nccl(prefixed, spec) : make_gloo(prefixed, spec);
  return std::make_unique<C10dCommunicator>(store, backend, spec.backend);
}

std::unique_ptr<Communicator> single_process_communicator() { return std::make_unique<SingleProcess>(); }

void set_collective_wait_listener(CollectiveWaitListener listener) { wait_listener.store(listener); }

std::string nccl_version() {
#ifdef CVTRAIN_WITH_NCCL
  return c10d::getNcclVersion();  // through libtorch_cuda, which links NCCL itself
#else
  return "none";
#endif
}

}  // namespace cvtrain
