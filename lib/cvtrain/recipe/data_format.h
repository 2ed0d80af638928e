// data.format: auto — which format a dataset path holds, told from the path as `cvtrain data
// inspect` tells it, so that a recipe needs to name its format only to override the guess.
#pragma once

#include <optional>
#include <string>

#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

// A .csv, .tsv or .txt file: an image list (data.format list).
bool is_image_list_path(const std::string& path);

// An existing path: a folder holding classes.txt is shards (`cvtrain data pack` writes it), any
// other folder an ImageFolder tree, a list's extension a list, any other file IDX. A path not
// here (`cvtrain check --no-paths`) is told by its name where the name says it (a list's
// extension; IDX's .gz, .idx or -ubyte), and is nullopt otherwise.
std::optional<DataFormat> format_of_path(const std::string& path);

}  // namespace cvtrain
