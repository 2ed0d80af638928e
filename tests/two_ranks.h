// Two ranks as two threads of the test process, each with its own Gloo process group over a
// loopback TCPStore: the collectives, checkpoints and evaluation of a world of two, in process and
// in seconds. A rank's failure is rethrown on the test's thread after both have ended.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "cvtrain/comm/communicator.h"
#include "run_shell.h"

namespace cvtrain::testing {

// Runs `body(comm)` as ranks 0 and 1 of one group. The body runs on the ranks' threads: it throws
// instead of using Catch's macros, which are not for other threads.
inline void on_two_ranks(const std::function<void(Communicator&)>& body) {
  const int port = std::stoi(cvtrain::testing::port());
  std::vector<std::exception_ptr> failures(2);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank)
    ranks.emplace_back([&, rank] {
      try {
        auto comm = connect(GroupSpec{rank, 2, "127.0.0.1", port, "gloo", std::chrono::seconds(60)});
        body(*comm);
        comm->barrier("end of the test");
      } catch (...) {
        failures[static_cast<size_t>(rank)] = std::current_exception();
      }
    });
  for (auto& t : ranks) t.join();
  for (const auto& failure : failures)
    if (failure) std::rethrow_exception(failure);
}

}  // namespace cvtrain::testing
