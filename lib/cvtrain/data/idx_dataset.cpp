// IDX reading through zlib's gzread, which reads gzipped and plain files alike.
#include "cvtrain/data/idx_dataset.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "cvtrain/core/error.h"

namespace cvtrain {
namespace {

constexpr uint8_t kUnsignedByteType = 0x08;

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};

void read_exactly(gzFile file, void* out, size_t bytes, const std::string& path, const char* what) {
  auto* dst = static_cast<uint8_t*>(out);
  while (bytes > 0) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(bytes, 1u << 30));
    const int got = gzread(file, dst, chunk);
    if (got <= 0) throw Error(fmt::format("{}: file ends early while reading the {} (corrupt or truncated IDX file)", path, what));
    dst += got;
    bytes -= static_cast<size_t>(got);
  }
}

}  // namespace

IdxArray read_idx(const std::string& path, size_t max_items) {
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
  if (!file) throw IoError(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
  uint8_t magic[4];
  read_exactly(file.get(), magic, 4, path, "header");
  if (magic[0] != 0 || magic[1] != 0 || magic[3] == 0 || magic[3] > 4)
    throw Error(fmt::format("{}: not an IDX file (magic bytes {:02x} {:02x} {:02x} {:02x})", path, magic[0], magic[1], magic[2], magic[3]));
  if (magic[2] != kUnsignedByteType)
    throw Error(fmt::format("{}: IDX element type 0x{:02x} is not unsigned byte (0x08)", path, magic[2]));
  IdxArray array;
  size_t total = 1;
  for (int d = 0; d < magic[3]; ++d) {
    uint8_t be[4];
    read_exactly(file.get(), be, 4, path, "dimensions");
    array.dims.push_back((uint32_t{be[0]} << 24) | (uint32_t{be[1]} << 16) | (uint32_t{be[2]} << 8) | be[3]);
    total *= array.dims.back();
  }
  if (total > (size_t{1} << 36)) throw Error(fmt::format("{}: IDX dimensions claim {} bytes, more than any real dataset", path, total));
  array.items_in_file = array.dims.empty() ? 0 : array.dims[0];
  if (max_items > 0 && max_items < array.dims[0]) {
    total = total / array.dims[0] * max_items;
    array.dims[0] = static_cast<uint32_t>(max_items);
  }
  array.data.resize(total);
  read_exactly(file.get(), array.data.data(), total, path, "data");
  return array;
}

std::string idx_labels_path(const std::string& images_path) {
  std::string path = images_path;
  const size_t at = path.rfind("images-idx3");
  if (at == std::string::npos) return "";
  return path.replace(at, 11, "labels-idx1");
}

IdxDataset::IdxDataset(const std::string& images_path, int64_t limit) : path_(images_path) {
  images_ = read_idx(images_path, limit > 0 ? static_cast<size_t>(limit) : 0);
  if (images_.dims.size() != 3)
    throw Error(fmt::format("{}: expected images of shape [N, H, W] (idx3), found {} dimensions", path_, images_.dims.size()));
  const std::string labels_file = idx_labels_path(images_path);
  if (labels_file.empty() || !std::filesystem::exists(labels_file))
    throw Error(fmt::format("{}: no labels file beside it (expected '{}')", path_,
                            labels_file.empty() ? "a name containing images-idx3" : labels_file));
  // Every label (a few kilobytes), so the class count is the dataset's whatever the subset.
  IdxArray labels = read_idx(labels_file);
  if (labels.dims.size() != 1 || labels.dims[0] != images_.items_in_file)
    throw Error(fmt::format("{}: {} labels for {} images in {}", labels_file, labels.dims.empty() ? 0 : labels.dims[0], images_.items_in_file,
                            path_));
  count_ = images_.dims[0];
  height_ = static_cast<int>(images_.dims[1]);
  width_ = static_cast<int>(images_.dims[2]);
  labels_ = std::move(labels.data);
  num_classes_ = 1 + *std::max_element(labels_.begin(), labels_.end());
}

RawSample IdxDataset::read(size_t index) const {
  const size_t pixels = static_cast<size_t>(height_) * width_;
  const auto first = images_.data.begin() + static_cast<std::ptrdiff_t>(index * pixels);
  return RawSample{{}, Image{std::vector<uint8_t>(first, first + static_cast<std::ptrdiff_t>(pixels)), height_, width_, 1}};
}

std::string IdxDataset::describe(size_t index) const { return fmt::format("{} #{}", path_, index); }

}  // namespace cvtrain
