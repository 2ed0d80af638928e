// The images of cvtrain predict's command line, and the dataset that reads them.
#include "cvtrain/data/image_files.h"

#include <fmt/format.h>

#include <filesystem>

#include "cvtrain/core/error.h"
#include "cvtrain/data/image_decode.h"
#include "cvtrain/data/image_views.h"
#include "cvtrain/data/image_folder.h"
#include "cvtrain/data/image_ops.h"

namespace cvtrain {

namespace fs = std::filesystem;

std::vector<std::string> image_files_of(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (fs::is_directory(input, ec)) {
      std::vector<std::string> found = image_files_under(input);
      if (found.empty())
        throw Error(
            fmt::format("{}: a folder without image files (.jpg, .jpeg, .png, .bmp, .webp, .tif, .tiff, .ppm, .pgm) at any depth", input));
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(input, ec)) {
      files.push_back(input);
    } else {
      throw Error(fmt::format("{}: no such file or folder", input));
    }
  }
  return files;
}

ImageFilesDataset::ImageFilesDataset(std::vector<std::string> files, int channels) : files_(std::move(files)), channels_(channels) {
  if (channels_ != 1 && channels_ != 3)
    throw Error(fmt::format("images for a model of {} input channels: only 1 or 3 are read", channels_));
}

RawSample ImageFilesDataset::read(size_t index) const {
  RawSample sample;
  sample.encoded = read_file_bytes(files_[index]);
  if (channels_ == 3) return sample;
  Image rgb = decode_view(sample.encoded, files_[index], ImageView::exact);
  Image& gray = sample.image;
  gray.width = rgb.width;
  gray.height = rgb.height;
  gray.channels = 1;
  gray.pixels = gray_levels(PixelView{rgb.pixels.data(), rgb.width, rgb.height, rgb.channels});
  sample.encoded.clear();
  return sample;
}

}  // namespace cvtrain
