// Slurm's compressed host lists ("gpu[01-04,07]", "a1,b[2-3]", "r[1-2]-n[01-02]") expanded to names.
#pragma once

#include <string>
#include <vector>

namespace cvtrain {

// Throws Error naming the list when brackets or ranges are malformed.
std::vector<std::string> expand_nodelist(const std::string& list);

}  // namespace cvtrain
