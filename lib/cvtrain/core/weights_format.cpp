// Telling a safetensors file from torch.save's formats by their first bytes (weights_format.h).
#include "cvtrain/core/weights_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>

namespace cvtrain {

std::string other_weight_format(const uint8_t* bytes, size_t size) {
  const auto starts_with = [&](std::initializer_list<uint8_t> magic) {
    return size >= magic.size() && std::equal(magic.begin(), magic.end(), bytes);
  };
  if (starts_with({'P', 'K', 3, 4})) return "a zip archive: torch.save's .pt/.pth, or LibTorch's torch::save such as a run's model.pt";
  if (size >= 2 && bytes[0] == 0x80 && bytes[1] >= 2 && bytes[1] <= 5) return "a Python pickle: torch.save's legacy format";
  if (starts_with({0x89, 'H', 'D', 'F'})) return "an HDF5 file";
  return "";
}

std::string not_safetensors_message(const std::string& source, const std::string& why) {
  return fmt::format(
      "{}: not a safetensors file ({}); give a checkpoint's model.safetensors or `cvtrain export`'s file, or convert "
      "with safetensors.torch.save_file",
      source, why);
}

std::optional<std::string> safetensors_file_problem(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (ec || !in) return std::nullopt;  // not there or unreadable: the path checks and the load say so
  uint8_t start[9] = {};
  in.read(reinterpret_cast<char*>(start), sizeof start);
  const auto got = static_cast<size_t>(in.gcount());
  if (const std::string kind = other_weight_format(start, got); !kind.empty()) return not_safetensors_message(path, "it is " + kind);
  if (size < 9) return not_safetensors_message(path, fmt::format("{} bytes, too short", size));
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | start[i];
  if (header_bytes > size - 8)
    return not_safetensors_message(path, fmt::format("header length {} does not fit the {}-byte file", header_bytes, size));
  if (start[8] != '{') return not_safetensors_message(path, "its header is no JSON object");
  return std::nullopt;
}

}  // namespace cvtrain
