// Runs a bash snippet for end-to-end tests, with $CVTRAIN set to the binary under test; output
// (stdout and stderr) is captured through a file in the test's folder.
#pragma once

#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <string>

#include "temp_dir.h"

namespace cvtrain::testing {

struct ShellRun {
  int exit_code = -1;
  std::string output;
  double seconds = 0;
};

inline ShellRun run_shell(const std::string& script, const TempDir& dir) {
  const std::string path = dir.write("run.sh", "CVTRAIN=" + std::string(CVTRAIN_BINARY) + "\n" + script + "\n");
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(("bash " + path + " > " + dir.file("run.log") + " 2>&1").c_str());
  return ShellRun{WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(dir.file("run.log")),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

// A port for a test's rendezvous, spread so parallel tests rarely meet.
inline std::string random_port() { return std::to_string(30000 + std::random_device{}() % 20000); }

}  // namespace cvtrain::testing
