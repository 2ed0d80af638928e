// Supervisor event loop: poll() over each rank's output pipe and a self-pipe fed by the signal
// handler (the only async-signal-safe way to react to signals), waitpid() for exits, and a look
// at each rank's progress pipe on every turn (at least every 100 ms).
#include "cvtrain/launch/supervisor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <fstream>

#include "cvtrain/core/error.h"
#include "cvtrain/core/text.h"
#include "cvtrain/core/timer.h"
#include "cvtrain/launch/child_environment.h"
#include "cvtrain/launch/heartbeat.h"


namespace cvtrain {
namespace {

int g_signal_pipe[2] = {-1, -1};
constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGUSR1};

// Whether `pid` is stopped (state T or t in /proc/PID/stat): SIGSTOP, SIGTSTP or a debugger.
bool process_stopped(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t name_end = line.rfind(')');  // the command name may hold spaces and parentheses
  return name_end != std::string::npos && name_end + 2 < line.size() && (line[name_end + 2] == 'T' || line[name_end + 2] == 't');
}

extern "C" void on_signal(int signal_number) {
  const int saved = errno;
  const char byte = static_cast<char>(signal_number);
  [[maybe_unused]] const ssize_t n = write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}

// Installs the forwarding handlers for the supervisor's lifetime and restores the old ones after.
class SignalForwarding {
 public:
  SignalForwarding() {
    if (pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw Error(fmt::format("supervisor: pipe: {}", std::strerror(errno)));
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    for (size_t i = 0; i < std::size(kForwardedSignals); ++i) sigaction(kForwardedSignals[i], &action, &previous_[i]);
  }
  ~SignalForwarding() {
    for (size_t i = 0; i < std::size(kForwardedSignals); ++i) sigaction(kForwardedSignals[i], &previous_[i], nullptr);
    close(g_signal_pipe[0]);
    close(g_signal_pipe[1]);
    g_signal_pipe[0] = g_signal_pipe[1] = -1;
  }

 private:
  struct sigaction previous_[std::size(kForwardedSignals)] {};
};

struct Child {
  std::string label;
  pid_t pid = -1;
  int output = -1;      // read end of its stdout+stderr pipe, -1 once closed
  std::string partial;  // output after the last newline
  bool running = true;
  int progress = -1;    // read end of its progress pipe (8-byte step numbers), -1 once closed
  int64_t last_step = -1;  // last progress value (see heartbeat.h); -1: none yet, the hang watch is not armed
  Stopwatch since_progress;
};

// The descriptor number the progress pipe gets in a rank (announced in CVTRAIN_PROGRESS_FD).
constexpr int kProgressFd = 3;

Child start(const RankProcess& rank) {
  int fds[2], progress[2];
  if (pipe2(fds, O_CLOEXEC) != 0 || pipe2(progress, O_CLOEXEC) != 0)
    throw Error(fmt::format("supervisor: pipe: {}", std::strerror(errno)));
  // Everything exec needs is built before fork: the child only calls async-signal-safe functions.
  RankProcess with_progress = rank;
  with_progress.env.emplace_back("CVTRAIN_PROGRESS_FD", std::to_string(kProgressFd));
  std::vector<std::string> argv_strings = rank.argv, env_strings = child_environment(with_progress.env);
  std::vector<char*> argv = exec_pointers(argv_strings), envp = exec_pointers(env_strings);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw Error(fmt::format("supervisor: cannot start {}: {}", rank.label, std::strerror(errno)));
  if (pid == 0) {
    setpgid(0, 0);  // its own process group, so signals reach the rank's own children too
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the supervisor died before prctl took effect
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    dup2(progress[1], kProgressFd);  // dup2 clears close-on-exec: the rank inherits it
    execvpe(argv[0], argv.data(), envp.data());
    const std::string message = fmt::format("cannot execute {}: {}\n", argv[0], std::strerror(errno));
    [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, message.data(), message.size());
    _exit(127);
  }
  setpgid(pid, pid);  // also here, so the group exists before the first kill(-pid) whoever runs first
  close(fds[1]);
  close(progress[1]);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  fcntl(progress[0], F_SETFL, O_NONBLOCK);
  Child child;
  child.label = rank.label;
  child.pid = pid;
  child.output = fds[0];
  child.progress = progress[0];
  return child;
}

void emit_lines(Child& child, bool flush_partial) {
  size_t start = 0, newline;
  std::string out;
  while ((newline = child.partial.find('\n', start)) != std::string::npos) {
    out += fmt::format("[{}] {}\n", child.label, child.partial.substr(start, newline - start));
    start = newline + 1;
  }
  child.partial.erase(0, start);
  if (flush_partial && !child.partial.empty()) {
    out += fmt::format("[{}] {}\n", child.label, child.partial);
    child.partial.clear();
  }
  if (!out.empty()) {
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
  }
}

void drain(Child& child) {
  char buffer[65536];
  for (;;) {
    const ssize_t n = read(child.output, buffer, sizeof buffer);
    if (n > 0) {
      child.partial.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    close(child.output);  // end of file, or an error that ends the stream all the same
    child.output = -1;
    break;
  }
  emit_lines(child, child.output < 0);
}

// Takes every step number the rank reported since the last look.
void read_progress(Child& child) {
  int64_t steps[512];
  for (;;) {
    const ssize_t n = read(child.progress, steps, sizeof steps);
    if (n >= static_cast<ssize_t>(sizeof(int64_t))) {
      child.last_step = steps[n / static_cast<ssize_t>(sizeof(int64_t)) - 1];
      child.since_progress.reset();
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    close(child.progress);
    child.progress = -1;
    return;
  }
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return fmt::format("exited with code {}", WEXITSTATUS(status));
}

class Supervisor {
 public:
  Supervisor(const std::vector<RankProcess>& ranks, const SupervisorOptions& options) : options_(options) {
    for (const auto& rank : ranks) children_.push_back(start(rank));
  }

  JobOutcome run() {
    while (any_running() || any_output_open()) {
      wait_for_events();
      reap_exited();
      watch_for_hangs();
      if (stopping_ && !killed_ && stop_clock_.seconds() > options_.grace_s) signal_running(SIGKILL), killed_ = true;
    }
    return outcome_;
  }

 private:
  bool any_running() const {
    for (const auto& c : children_)
      if (c.running) return true;
    return false;
  }
  bool any_output_open() const {
    for (const auto& c : children_)
      if (c.output >= 0) return true;
    return false;
  }

  void wait_for_events() {
    std::vector<pollfd> fds{{g_signal_pipe[0], POLLIN, 0}};
    std::vector<Child*> owners{nullptr};
    for (auto& c : children_) {
      if (c.output >= 0) fds.push_back({c.output, POLLIN, 0}), owners.push_back(&c);
      if (c.progress >= 0) read_progress(c);
    }
    // Output pipes can outlive their process (a grandchild holding them): stop waiting once all exited.
    const int timeout_ms = any_running() ? 100 : 0;
    if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR)
      throw Error(fmt::format("supervisor: poll: {}", std::strerror(errno)));
    if (fds[0].revents & POLLIN) forward_pending_signals();
    for (size_t i = 1; i < fds.size(); ++i)
      if (fds[i].revents) drain(*owners[i]);
    if (!any_running())
      for (auto& c : children_)
        if (c.output >= 0) drain(c), close(c.output), c.output = -1;
  }

  void forward_pending_signals() {
    char signals[64];
    const ssize_t n = read(g_signal_pipe[0], signals, sizeof signals);
    for (ssize_t i = 0; i < n; ++i) signal_running(signals[i]);
  }

  // Signals go to each rank's process group: a rank's helpers stop with it.
  void signal_running(int signal_number) {
    for (const auto& c : children_)
      if (c.running) kill(-c.pid, signal_number);
  }

  void reap_exited() {
    for (auto& c : children_) {
      if (!c.running) continue;
      int status = 0;
      if (waitpid(c.pid, &status, WNOHANG) != c.pid) continue;
      c.running = false;
      kill(-c.pid, SIGKILL);  // whatever the rank left running in its group goes with it
      if (c.progress >= 0) close(c.progress), c.progress = -1;
      const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      if (failed && outcome_.failed.empty()) {
        outcome_.failed = c.label;
        outcome_.how = describe_status(status);
        outcome_.exit_code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
        stop_others();
      }
    }
  }

  // A rank that reported steps and then none for hang_timeout_s: the job is stopped, naming the
  // rank(s) furthest behind (a rank stuck outside a collective leaves the others waiting inside
  // it one step later). A rank whose process is stopped (SIGSTOP, a debugger) is the culprit even
  // when it stopped inside the collective the others wait in, where its progress reads as theirs.
  void watch_for_hangs() {
    if (options_.hang_timeout_s <= 0 || stopping_) return;
    bool hung = false, any_stopped = false;
    for (const auto& c : children_) {
      if (!c.running || c.last_step < 0) continue;
      hung = hung || c.since_progress.seconds() > options_.hang_timeout_s;
      any_stopped = any_stopped || process_stopped(c.pid);
    }
    if (!hung) return;
    int64_t behind = INT64_MAX, ahead = -1;
    for (const auto& c : children_) {
      if (!c.running || c.last_step < 0) continue;
      if (!any_stopped || process_stopped(c.pid)) behind = std::min(behind, c.last_step);
      if (!any_stopped || !process_stopped(c.pid)) ahead = std::max(ahead, c.last_step);
    }
    std::vector<std::string> laggards;
    for (const auto& c : children_)
      if (c.running && c.last_step == behind && (!any_stopped || process_stopped(c.pid))) laggards.push_back(c.label);
    outcome_.failed = join(laggards, ", ");
    const std::string stopped_note = any_stopped ? fmt::format("; {} stopped (process state T: SIGSTOP or a debugger)",
                                                               laggards.size() == 1 ? "its process is" : "their processes are")
                                                 : "";
    const bool others = ahead >= 0 && (any_stopped || behind != ahead);
    outcome_.how = !others ? fmt::format("made no progress for {:.0f} s, {}{} (distributed.hang_timeout_s)", options_.hang_timeout_s,
                                         describe_progress(behind), stopped_note)
                           : fmt::format("made no progress for {:.0f} s, {}, while the others are {}{} (distributed.hang_timeout_s)",
                                         options_.hang_timeout_s, describe_progress(behind), describe_progress(ahead), stopped_note);
    outcome_.exit_code = kExitHang;
    // At once: a hung rank cannot take SIGTERM's way out (save and exit), and the others wait
    // for it inside a collective, so a grace period would only be waited out.
    stopping_ = killed_ = true;
    signal_running(SIGKILL);
  }

  void stop_others() {
    stopping_ = true;
    stop_clock_.reset();
    signal_running(SIGTERM);
  }

  SupervisorOptions options_;
  std::vector<Child> children_;
  JobOutcome outcome_;
  bool stopping_ = false, killed_ = false;
  Stopwatch stop_clock_;
};

}  // namespace

JobOutcome supervise(const std::vector<RankProcess>& ranks, const SupervisorOptions& options) {
  std::fflush(stdout);
  std::fflush(stderr);
  SignalForwarding forwarding;
  return Supervisor(ranks, options).run();
}

}  // namespace cvtrain
