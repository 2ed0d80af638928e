// Image lists (data.format list): a CSV or TSV file whose header names a path and a label column
// (`path,label`, as Kaggle's sets and many annotation exports ship), or a text file of `PATH LABEL`
// lines (Caffe's and MXNet's train.txt). Paths relative to the list's folder; labels class names
// (sorted into numbers, as ImageFolder's folders) or, when every one is a whole number, those numbers.
#pragma once

#include <string>
#include <vector>

#include "cvtrain/data/dataset.h"

namespace cvtrain {

// A column a list's header names: its role in messages and the names it may have (any case, spaces
// and dashes as '_').
struct ListColumn {
  std::string role;
  std::vector<std::string> names;
};
struct ListEntry {
  std::string path, label;  // the first and second column's fields
};
// A CSV (or, by its extension, TSV) file's two named columns, row by row in file order (RFC 4180
// quotes, '#' lines and blank lines skipped); throws Error naming file:line for a malformed table.
std::vector<ListEntry> read_list_table(const std::string& path, const ListColumn& first, const ListColumn& second);

// The list's entries in file order; throws Error naming file:line for a malformed list.
struct ImageList {
  std::vector<std::string> files;  // as paths to open (relative ones joined to the list's folder)
  std::vector<int64_t> labels;
  std::vector<std::string> classes;  // label i's name
};
// `root`: the folder relative paths are taken from; "" for the list's own folder.
ImageList read_image_list(const std::string& list_path, const std::string& root = "");

class ImageListDataset : public Dataset {
 public:
  // `limit` > 0 keeps every k-th entry, as ImageFolderDataset does. Throws Error when none of a
  // spread of the listed files exists (paths relative to the wrong folder, say).
  ImageListDataset(const std::string& list_path, int64_t limit, const std::string& root = "");
  size_t size() const override { return list_.files.size(); }
  int64_t label(size_t index) const override { return list_.labels[index]; }
  int64_t num_classes() const override { return static_cast<int64_t>(list_.classes.size()); }
  int channels() const override { return 3; }
  RawSample read(size_t index) const override;
  std::string describe(size_t index) const override { return list_.files[index]; }
  std::vector<std::string> class_names() const override { return list_.classes; }

 private:
  ImageList list_;
};

}  // namespace cvtrain
