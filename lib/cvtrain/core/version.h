// cvtrain's own version, shown by --version and recorded in every checkpoint.
#pragma once

namespace cvtrain {

inline constexpr const char* kVersion = "0.1.0";

}  // namespace cvtrain
