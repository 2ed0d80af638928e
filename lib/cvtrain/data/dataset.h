// The Dataset interface every format implements: random access to samples as stored (encoded
// bytes, decoded later at the scale the crop needs) or as pixels (uint8 HWC).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cvtrain {

struct DataSpec;
enum class DataFormat;  // recipe/recipe.h

// Pillow's Image.MAX_IMAGE_PIXELS: larger images are refused as decompression bombs unless a
// limit says otherwise (data.max_image_pixels' default in recipe.h is the same number).
constexpr int64_t kDefaultMaxImagePixels = 89478485;

// One decoded image, interleaved channels (HWC), 8 bits per channel.
struct Image {
  std::vector<uint8_t> pixels;
  int height = 0;
  int width = 0;
  int channels = 0;
};

struct ImageSize {
  int width = 0;
  int height = 0;
};

// A rectangle of pixels.
struct PixelRect {
  int x = 0, y = 0, width = 0, height = 0;
};

// Part of a picture decoded at some scale: `image` holds the pixels of the `full`-size (scaled)
// picture from column x, row y on. A whole decoded image is the window at (0, 0).
struct ImageWindow {
  Image image;
  ImageSize full;
  int x = 0;
  int y = 0;
};

// One sample as the dataset holds it: encoded bytes (JPEG, PNG, ...; possibly none, for an
// empty file) or the pixels themselves.
struct RawSample {
  std::vector<uint8_t> encoded;
  Image image;
  bool has_pixels() const { return image.channels > 0; }
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual size_t size() const = 0;
  virtual int64_t label(size_t index) const = 0;
  virtual int64_t num_classes() const = 0;
  virtual int channels() const = 0;
  // Thread-safe; throws Error naming the sample (see describe) when it cannot be read.
  virtual RawSample read(size_t index) const = 0;
  // Where a sample comes from, for messages: a file path, or "file.gz #17".
  virtual std::string describe(size_t index) const = 0;
  // Label i's name: a folder name, or the number itself where the format has no names.
  virtual std::vector<std::string> class_names() const;
  // read() decoded at full size, with the dataset's channels.
  Image load(size_t index) const;
};

// The format an existing path holds (recipe/data_format.h's rules; an error if it is not there).
// For tools that take a path without a recipe.
DataFormat detect_format(const std::string& path);

// Opens `path` in data.format; `limit` > 0 keeps only `limit` samples (see DataSpec::max_samples).
std::unique_ptr<Dataset> open_dataset(const DataSpec& spec, const std::string& path, int64_t limit);

}  // namespace cvtrain
