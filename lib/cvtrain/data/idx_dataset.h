// IDX files (MNIST, Fashion-MNIST), gzipped or raw: images idx3 uint8 plus labels idx1 uint8.
#pragma once

#include <string>

#include "cvtrain/data/dataset.h"

namespace cvtrain {

// The raw contents of one IDX file of unsigned bytes.
struct IdxArray {
  std::vector<uint32_t> dims;  // as read (dims[0]: the items read)
  std::vector<uint8_t> data;
  uint32_t items_in_file = 0;  // dims[0] as the header says
};

// Throws Error naming the file on a bad magic number, a non-uint8 type or a short file. With
// `max_items` > 0 only the first that many items (along the first dimension) are read, and
// dims[0] says how many were: a subset decompresses no more than it uses.
IdxArray read_idx(const std::string& path, size_t max_items = 0);

// The labels file that goes with an images file: "...-images-idx3-ubyte..." -> "...-labels-idx1-ubyte...".
std::string idx_labels_path(const std::string& images_path);

class IdxDataset : public Dataset {
 public:
  IdxDataset(const std::string& images_path, int64_t limit);
  size_t size() const override { return count_; }
  int64_t label(size_t index) const override { return labels_[index]; }
  int64_t num_classes() const override { return num_classes_; }
  int channels() const override { return 1; }
  RawSample read(size_t index) const override;
  std::string describe(size_t index) const override;

 private:
  std::string path_;
  IdxArray images_;
  std::vector<uint8_t> labels_;
  size_t count_ = 0;
  int height_ = 0, width_ = 0;
  int64_t num_classes_ = 0;
};

}  // namespace cvtrain
