// fork + execvpe with everything built before the fork (the child calls only async-signal-safe
// functions), waitpid polled so a stop request is noticed between exits.
#include "cvtrain/launch/process_pool.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "cvtrain/core/error.h"
#include "cvtrain/launch/child_environment.h"
#include "cvtrain/launch/stop_request.h"

namespace cvtrain {
namespace {

int code_of(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1; }

}  // namespace

int ProcessPool::start(const ChildSpec& spec) {
  const int out = open(spec.output_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out < 0) throw Error(fmt::format("{}: cannot open for the output of {}: {}", spec.output_file, spec.argv.at(0), std::strerror(errno)));
  std::vector<std::string> argv_strings = spec.argv, env_strings = child_environment(spec.env);
  std::vector<char*> argv = exec_pointers(argv_strings), envp = exec_pointers(env_strings);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(out);
    throw Error(fmt::format("cannot start {}: {}", spec.argv.at(0), std::strerror(errno)));
  }
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // a trial saves its checkpoint when the sweep dies
    if (getppid() != parent) _exit(127);
    dup2(out, STDOUT_FILENO);
    dup2(out, STDERR_FILENO);
    execvpe(argv[0], argv.data(), envp.data());
    const std::string message = fmt::format("cannot execute {}: {}\n", argv[0], std::strerror(errno));
    [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, message.data(), message.size());
    _exit(127);
  }
  setpgid(pid, pid);
  close(out);
  pids_.push_back(pid);
  return pid;
}

ChildExit ProcessPool::wait_any() {
  if (pids_.empty()) throw Error("wait_any: no child is running");
  for (;;) {
    if (stop_requested() && !stop_forwarded_) {
      for (int pid : pids_) kill(-pid, stop_requested());
      stop_forwarded_ = true;
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0 && std::find(pids_.begin(), pids_.end(), pid) != pids_.end()) {
      pids_.erase(std::find(pids_.begin(), pids_.end(), pid));
      return ChildExit{pid, code_of(status)};
    }
    if (pid < 0 && errno != EINTR) throw Error(fmt::format("waitpid: {}", std::strerror(errno)));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

ProcessPool::~ProcessPool() {
  for (int pid : pids_) kill(-pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!pids_.empty()) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) pids_.erase(std::remove(pids_.begin(), pids_.end(), pid), pids_.end());
    if (pid < 0 && errno == ECHILD) break;
    if (std::chrono::steady_clock::now() > deadline)
      for (int p : pids_) kill(-p, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace cvtrain
