// Names of the models build_model knows; torch-free so the CLI and recipe checks can list them.
#pragma once

#include <string>
#include <vector>

namespace cvtrain {

std::vector<std::string> model_names();

}  // namespace cvtrain
