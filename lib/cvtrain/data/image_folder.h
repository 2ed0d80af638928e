// ImageFolder trees: one sub-folder per class (sorted names give labels), JPEG/PNG/... files inside
// it at any depth, in torchvision's ImageFolder order; dot-named folders and files left out.
#pragma once

#include <string>
#include <vector>

#include "cvtrain/data/dataset.h"

namespace cvtrain {

// A class folder without an image cannot train (torchvision's ImageFolder refuses it too), but
// `data inspect` shows it among the others.
enum class EmptyClasses { kRefused, kKept };

class ImageFolderDataset : public Dataset {
 public:
  ImageFolderDataset(const std::string& root, int64_t limit, EmptyClasses empty = EmptyClasses::kRefused);
  size_t size() const override { return files_.size(); }
  int64_t label(size_t index) const override { return labels_[index]; }
  int64_t num_classes() const override { return static_cast<int64_t>(classes_.size()); }
  int channels() const override { return 3; }
  RawSample read(size_t index) const override;
  std::string describe(size_t index) const override { return files_[index]; }
  std::vector<std::string> class_names() const override { return classes_; }

 private:
  std::vector<std::string> classes_;
  std::vector<std::string> files_;
  std::vector<int64_t> labels_;
};

// ROOT's class folders, sorted (label i = name i), as torchvision's find_classes but for hidden
// (dot-named) folders, which are left out; throws Error for none.
std::vector<std::string> image_folder_classes(const std::string& root);

// The image files under `folder` at any depth, in the order ImageFolder lists a class folder's
// (torchvision's), dot-named folders and files left out.
std::vector<std::string> image_files_under(const std::string& folder);

// Keeps every k-th of the samples so that `limit` remain (data.max_samples), in order: every class
// of a class-ordered set stays present. `limit` <= 0 or above the count keeps all.
void keep_spread(std::vector<std::string>& files, std::vector<int64_t>& labels, int64_t limit);

// The whole file, in one read where the size is known; throws Error naming the file.
std::vector<uint8_t> read_file_bytes(const std::string& path);

}  // namespace cvtrain
