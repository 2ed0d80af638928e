// The Dataset interface every format implements: random access to decoded uint8 HWC images.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cvtrain {

struct DataSpec;

// One decoded image, interleaved channels (HWC), 8 bits per channel.
struct Image {
  std::vector<uint8_t> pixels;
  int height = 0;
  int width = 0;
  int channels = 0;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual size_t size() const = 0;
  virtual int64_t label(size_t index) const = 0;
  virtual int64_t num_classes() const = 0;
  virtual int channels() const = 0;
  // Thread-safe; throws Error naming the sample (see describe) when it cannot be decoded.
  virtual Image load(size_t index) const = 0;
  // Where a sample comes from, for messages: a file path, or "file.gz #17".
  virtual std::string describe(size_t index) const = 0;
};

// Opens `path` in data.format; `limit` > 0 keeps only the first `limit` samples.
std::unique_ptr<Dataset> open_dataset(const DataSpec& spec, const std::string& path, int64_t limit);

}  // namespace cvtrain
