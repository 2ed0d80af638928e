// Whole text files: read one if it is there, and write one so that a reader never sees it half
// written (a temporary name, then a rename).
#pragma once

#include <optional>
#include <string>

namespace cvtrain {

// The file's bytes; nullopt when it cannot be opened (missing, or not readable).
std::optional<std::string> read_text_file(const std::string& path);

// Writes `contents` to path + ".tmp" and renames it into place; throws Error naming the file.
void write_file_atomically(const std::string& path, const std::string& contents);

}  // namespace cvtrain
