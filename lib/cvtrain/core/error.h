// Error types shared by every layer: RecipeError (user mistake, exit 2) and Error (runtime, exit 1).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace cvtrain {

// A runtime failure: bad data on disk, an unwritable directory, a failed collective.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Storage failing under a path that is there (cannot open, list or read it): no recipe change
// fixes it, so it is a runtime error (exit 1), never a recipe error, wherever it happens.
class IoError : public Error {
 public:
  using Error::Error;
};

// One or more mistakes in a recipe or its overrides; each problem names its key and origin.
class RecipeError : public Error {
 public:
  explicit RecipeError(std::vector<std::string> problems);
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::vector<std::string> problems_;
};

// Training stopped on request (SIGTERM, SIGUSR1, SIGINT) after saving a checkpoint: not a
// failure, and the next start resumes. Exits kExitPreempted. Not an Error, so that code which
// handles failures (`catch (const Error&)`) never turns a preemption into one.
class Stopped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr int kExitRuntimeError = 1;
inline constexpr int kExitRecipeError = 2;
inline constexpr int kExitPreempted = 75;  // EX_TEMPFAIL: try again later (Slurm scripts requeue on it)

}  // namespace cvtrain
