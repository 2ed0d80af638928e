// `cvtrain data inspect`: what a shards folder holds (samples, shards, classes, sizes) and, when
// asked, which of its samples no longer match their checksum or do not decode.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace cvtrain {

struct ShardInspection {
  std::string folder;
  size_t samples = 0;
  size_t shards = 0;
  uint64_t encoded_bytes = 0;
  std::vector<std::pair<std::string, size_t>> per_class;  // class name, samples, in label order (classes without samples too)
  bool verified = false;
  std::vector<std::string> unreadable;  // with --verify: why each unusable sample failed

  std::string summary() const;  // the report `data inspect` prints
};

struct VerifyOptions {
  bool verify = false;  // check and decode every sample
  int64_t workers = 1;  // threads that do it
  // Called on the calling thread after each block with how many samples are checked, of how many; unset: nothing.
  std::function<void(size_t done, size_t total)> progress;
};

// Throws Error naming the folder when it is not a shards folder.
ShardInspection inspect_shards(const std::string& folder, const VerifyOptions& options = {});

}  // namespace cvtrain
