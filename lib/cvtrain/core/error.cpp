// RecipeError joins its problems into one message so every mistake is reported at once.
#include "cvtrain/core/error.h"

namespace cvtrain {
namespace {
std::string join_problems(const std::vector<std::string>& problems) {
  std::string text = problems.size() == 1 ? "recipe error:" : std::to_string(problems.size()) + " recipe errors:";
  for (const auto& p : problems) text += "\n  " + p;
  return text;
}
}  // namespace

RecipeError::RecipeError(std::vector<std::string> problems)
    : Error(join_problems(problems)), problems_(std::move(problems)) {}

}  // namespace cvtrain
