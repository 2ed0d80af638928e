// Independent child processes, as a sweep's trials run: each started with its own environment and
// its output appended to its own file, waited for one at a time. Unlike the supervisor's group,
// one that fails changes nothing for the others. Each runs in its own process group and gets
// SIGTERM if this process dies (so a cvtrain trial saves a checkpoint); on a stop request here
// (SIGTERM, SIGINT, SIGUSR1) the signal is passed to every child once.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace cvtrain {

struct ChildSpec {
  std::vector<std::string> argv;                         // argv[0]: the program (PATH is searched)
  std::vector<std::pair<std::string, std::string>> env;  // set on top of this process's environment
  std::string output_file;                               // stdout and stderr, appended
};

struct ChildExit {
  int pid = 0;
  int exit_code = 0;  // 128 + signal when killed
};

class ProcessPool {
 public:
  ProcessPool() = default;
  ProcessPool(const ProcessPool&) = delete;
  ProcessPool& operator=(const ProcessPool&) = delete;
  // Stops what still runs (SIGTERM, then SIGKILL after 30 s) and waits for it.
  ~ProcessPool();

  // Returns the child's pid. Throws Error naming the program or the file when it cannot start.
  int start(const ChildSpec& spec);
  // Blocks until one child exits; passes a stop request of this process on to every child.
  ChildExit wait_any();
  size_t running() const { return pids_.size(); }

 private:
  std::vector<int> pids_;
  bool stop_forwarded_ = false;
};

}  // namespace cvtrain
