// The safetensors weight format (8-byte little-endian header length, JSON header, raw data):
// reading validates every offset, dtype and shape, so a malformed file is an error, never a crash.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cvtrain/core/error.h"

namespace at {
class Tensor;
}

namespace cvtrain {

// A file that is no safetensors file at all (a torch.save archive, a pickle…): what it is, not
// what is wrong with its contents, is the message.
class NotSafetensors : public Error {
 public:
  using Error::Error;
};

struct SafetensorEntry {
  std::string name;
  std::string dtype;             // F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;   // byte range within the data section
};

struct SafetensorsHeader {
  std::vector<SafetensorEntry> entries;  // in data order
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;               // file offset of the data section
};

// Parses the header of a whole file's bytes; throws Error naming `source` and, where it applies,
// the tensor. Checks that the entries tile the data section exactly, as the format requires.
SafetensorsHeader parse_safetensors(const std::vector<uint8_t>& file, const std::string& source);

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

NamedTensors read_safetensors(const std::string& path);
// The header's __metadata__ alone (empty when it has none), read without the tensors' bytes;
// throws as read_safetensors for a file that is no safetensors file.
std::map<std::string, std::string> read_safetensors_metadata(const std::string& path);
// Writes through a temporary file and a rename; tensors are stored contiguous, on the CPU.
void write_safetensors(const std::string& path, const NamedTensors& tensors, const std::map<std::string, std::string>& metadata = {});

}  // namespace cvtrain
