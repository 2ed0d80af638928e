// What every end-to-end test runs through: bash snippets with $CVTRAIN set to the binary under
// test (and, through shell(), $RECIPE to the quickstart recipe), output (stdout and stderr)
// captured through a file in the test's folder, and free rendezvous ports.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <random>
#include <regex>
#include <vector>
#include <string>

#include "temp_dir.h"

namespace cvtrain::testing {

struct ShellRun {
  int exit_code = -1;
  std::string output;
};

using Run = ShellRun;

inline const std::string kQuickstart = std::string(CVTRAIN_SOURCE_DIR) + "/recipes/quickstart.yaml";

// The command that runs a Python script of the suite (`kTestPython + " script.py ARGS"`, or `" - ARGS
// <<'PY'"` for one on stdin) in the venv's interpreter, through the suite's preloaded one
// (tests/python_server.py) where it runs.
inline const std::string kTestPython = CVTRAIN_TEST_PYTHON;

inline ShellRun run_shell(const std::string& script, const TempDir& dir) {
  const std::string path = dir.write("run.sh", "CVTRAIN=" + std::string(CVTRAIN_BINARY) + "\n" + script + "\n");
  const int status = std::system(("bash " + path + " > " + dir.file("run.log") + " 2>&1").c_str());
  return ShellRun{WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(dir.file("run.log"))};
}

// A port for a test's rendezvous: random, so parallel tests rarely meet, free when chosen, and below
// Linux's ephemeral range (32768-60999), where the kernel picks the local ports of outgoing
// connections (Gloo's, other tests' stores) and may take it before the test's server listens.
inline std::string random_port() {
  std::random_device random;
  for (;;) {
    const auto port = static_cast<uint16_t>(20000 + random() % 12000);
    const int probe = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool free = ::bind(probe, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
    ::close(probe);
    if (free) return std::to_string(port);
  }
}

// `script` with $RECIPE set to recipes/quickstart.yaml as well.
inline ShellRun shell(const std::string& script, const TempDir& dir) { return run_shell("RECIPE=" + kQuickstart + "\n" + script, dir); }

inline std::string port() { return random_port(); }

// Bash that sets $rank1 to the process of rank 1 among the children of $launcher (the rank with
// RANK=1 in its environment), waiting until it exists.
inline const std::string kFindRank1 =
    "rank1=\n"
    "while [ -z \"$rank1\" ] && kill -0 $launcher 2>/dev/null; do\n"
    "  for p in /proc/[0-9]*; do\n"
    "    [ \"$(cut -d' ' -f4 $p/stat 2>/dev/null)\" = \"$launcher\" ] && tr '\\0' '\\n' < $p/environ 2>/dev/null | grep -qx RANK=1 "
    "&& rank1=${p#/proc/}\n"
    "  done\n"
    "  sleep 0.05\n"
    "done\n"
    "echo \"rank 1 is process $rank1\"\n";

// Bash that stops $rank1 for 60 ms of every 100 until it exits, as a busy or throttled host would
// slow it.
inline const std::string kSlowDownRank1 = "while kill -STOP $rank1 2>/dev/null; do sleep 0.06; kill -CONT $rank1 2>/dev/null; sleep 0.04; done\n";

// Every number that follows `"key": ` in `text` (a metrics.jsonl or perf_summary.json), in order.
inline std::vector<double> numbers_after(const std::string& text, const std::string& key) {
  std::vector<double> values;
  const std::regex pattern("\"" + key + "\": ([-0-9.eE+]+)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern); it != std::sregex_iterator(); ++it)
    values.push_back(std::stod((*it)[1]));
  return values;
}

}  // namespace cvtrain::testing
