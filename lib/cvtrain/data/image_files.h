// Images named on a command line (cvtrain predict): files as given and folders walked as
// ImageFolder walks a class folder, read through a Dataset whose label of a file is its own index.
#pragma once

#include <string>
#include <vector>

#include "cvtrain/data/dataset.h"

namespace cvtrain {

// Every image `inputs` name, in order: a file as it is (whatever its name: one that is no image is
// told so when read), a folder's image files at any depth in torchvision's order (dot-named ones
// left out). Throws Error naming an input that does not exist or a folder that holds no image.
std::vector<std::string> image_files_of(const std::vector<std::string>& inputs);

class ImageFilesDataset : public Dataset {
 public:
  // `channels` 3: a sample is the file's bytes, decoded by the loader as any dataset's; 1 (a model
  // trained on gray images, as IDX holds): decoded here and made gray as Pillow's convert("L").
  ImageFilesDataset(std::vector<std::string> files, int channels);
  size_t size() const override { return files_.size(); }
  // A file's label is its index, so that a batch tells which file each of its rows holds (also
  // after the loader put the next usable file in the place of an unreadable one).
  int64_t label(size_t index) const override { return static_cast<int64_t>(index); }
  int64_t num_classes() const override { return static_cast<int64_t>(files_.size()); }
  int channels() const override { return channels_; }
  RawSample read(size_t index) const override;
  std::string describe(size_t index) const override { return files_[index]; }

 private:
  std::vector<std::string> files_;
  int channels_;
};

}  // namespace cvtrain
