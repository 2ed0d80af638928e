// data.format: auto — a dataset path's format from what is there, or failing that its name.
#include "cvtrain/recipe/data_format.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace cvtrain {
namespace fs = std::filesystem;

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
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
  if (fs::exists(path, ec)) return DataFormat::kIdx;
  const std::string name = lower(fs::path(path).filename().string());
  const std::string ext = lower(fs::path(path).extension().string());
  if (ext == ".gz" || ext == ".idx" || name.find("-ubyte") != std::string::npos) return DataFormat::kIdx;
  return std::nullopt;
}

}  // namespace cvtrain
