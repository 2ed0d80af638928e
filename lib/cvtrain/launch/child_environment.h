// What the supervisor and the process pool both hand to execvpe: this process's environment with a
// child's variables replacing any of the same name, and argv/envp as null-terminated pointer lists
// (built before fork, so the child calls only async-signal-safe functions).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace cvtrain {

std::vector<std::string> child_environment(const std::vector<std::pair<std::string, std::string>>& extra);
// Pointers into `strings`, which must outlive them, and a final nullptr.
std::vector<char*> exec_pointers(std::vector<std::string>& strings);

}  // namespace cvtrain
