// data.format: auto — a dataset path's format from what is there, or failing that its name.
#include "cvtrain/recipe/data_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>

namespace cvtrain {
namespace fs = std::filesystem;

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// The first bytes of an existing file (fewer if it is shorter or unreadable).
std::string first_bytes(const std::string& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes(n, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(n));
  bytes.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
  return bytes;
}

// IDX's magic (0, 0, type, dimensions), or gzip's, which MNIST's and Fashion-MNIST's files ship in.
bool starts_like_idx(const std::string& bytes) {
  if (bytes.size() >= 2 && static_cast<uint8_t>(bytes[0]) == 0x1F && static_cast<uint8_t>(bytes[1]) == 0x8B) return true;
  return bytes.size() >= 4 && bytes[0] == 0 && bytes[1] == 0 && bytes[3] >= 1 && bytes[3] <= 4;
}

// "'{"images": [...'" for text, "bytes 50 4b 03 04" otherwise.
std::string how_it_begins(const std::string& path) {
  std::string start = first_bytes(path, 24);
  if (start.empty()) return "nothing: it is empty";
  if (std::all_of(start.begin(), start.end(), [](unsigned char c) { return std::isprint(c) || std::isspace(c); })) {
    std::replace_if(
        start.begin(), start.end(), [](unsigned char c) { return std::isspace(c); }, ' ');
    return "'" + start + "...'";
  }
  std::string hex = "bytes";
  for (size_t i = 0; i < std::min<size_t>(start.size(), 4); ++i) hex += fmt::format(" {:02x}", static_cast<uint8_t>(start[i]));
  return hex;
}

}  // namespace

bool is_image_list_path(const std::string& path) {
  const std::string ext = lower(fs::path(path).extension().string());
  return ext == ".csv" || ext == ".tsv" || ext == ".txt";
}

std::optional<DataFormat> format_of_path(const std::string& path) {
  if (path.empty()) return std::nullopt;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return fs::exists(fs::path(path) / "classes.txt", ec) ? DataFormat::kShards : DataFormat::kImageFolder;
  if (is_image_list_path(path)) return DataFormat::kList;
  if (fs::exists(path, ec) && starts_like_idx(first_bytes(path, 4))) return DataFormat::kIdx;
  // Named as IDX files are (its reader then says what is wrong with one that is not).
  const std::string name = lower(fs::path(path).filename().string());
  const std::string ext = lower(fs::path(path).extension().string());
  if (ext == ".gz" || ext == ".idx" || name.find("-ubyte") != std::string::npos) return DataFormat::kIdx;
  return std::nullopt;
}

namespace {

// ADE20K's and Cityscapes' split folders: `images`/SPLIT beside `masks`/SPLIT.
bool split_folder_under(const fs::path& folder, const char* images, const char* masks) {
  std::error_code ec;
  return folder.parent_path().filename() == images && fs::is_directory(folder.parent_path().parent_path() / masks / folder.filename(), ec);
}

}  // namespace

std::optional<DataFormat> pairs_format_of_path(const std::string& path) {
  if (path.empty()) return std::nullopt;
  fs::path p = fs::absolute(path).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  const std::string ext = lower(p.extension().string());
  if (ext == ".txt" && p.parent_path().filename() == "Segmentation" && p.parent_path().parent_path().filename() == "ImageSets")
    return DataFormat::kVoc;
  if (ext == ".csv" || ext == ".tsv") return DataFormat::kList;
  std::error_code ec;
  if (fs::exists(p / "pairs.txt", ec) && fs::exists(p / "classes.txt", ec)) return DataFormat::kShards;  // `cvtrain data pack` of pairs
  if (split_folder_under(p, "images", "annotations")) return DataFormat::kAde20k;
  if (split_folder_under(p, "leftImg8bit", "gtFine")) return DataFormat::kCityscapes;
  return std::nullopt;
}

bool is_pairs_format(DataFormat format) {
  return format == DataFormat::kVoc || format == DataFormat::kAde20k || format == DataFormat::kCityscapes || format == DataFormat::kList;
}

std::string no_pairs_message(const std::string& path) {
  return fmt::format(
      "'{}' holds no segmentation pairs cvtrain reads: give a VOC split file (VOC2012/ImageSets/Segmentation/train.txt), a "
      "split folder of ADE20K (ADEChallengeData2016/images/training) or Cityscapes (leftImg8bit/train), a .csv/.tsv list "
      "of image,mask rows, or a folder `cvtrain data pack` packed pairs into (datasets/README.md, \"Segmentation pairs\")",
      path);
}

std::string no_dataset_message(const std::string& path) {
  return fmt::format(
      "'{}' is no dataset cvtrain reads (it begins with {}): give a folder of class folders (ImageFolder), a "
      "shards folder (`cvtrain data pack`), a .csv/.tsv/.txt image list or an IDX file (as Fashion-MNIST's)",
      path, how_it_begins(path));
}

}  // namespace cvtrain
