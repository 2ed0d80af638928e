// Whether a file given as weights is a safetensors file, told from its first bytes, so that a
// recipe naming torch.save's .pth fails at `cvtrain check` on the login node rather than when the
// job starts on its GPUs. Torch-free; models/safetensors.cpp reads the whole file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace cvtrain {

// What bytes that are no safetensors file most likely are ("a zip archive: torch.save's .pt/.pth ...",
// "a Python pickle ...", "an HDF5 file"), or "" when they do not say.
std::string other_weight_format(const uint8_t* bytes, size_t size);

// "SOURCE: not a safetensors file (WHY); give a checkpoint's model.safetensors or ..." with the way on.
std::string not_safetensors_message(const std::string& source, const std::string& why);

// Why the file at `path` is no safetensors file (a message as above), or nullopt when its first
// bytes are a safetensors header's start: its length (u64, little-endian) within the file, then '{'.
std::optional<std::string> safetensors_file_problem(const std::string& path);

}  // namespace cvtrain
