// ImageFolder scanning and decoding (TurboJPEG for JPEG, OpenCV imgcodecs for the rest).
#include "cvtrain/data/image_folder.h"

#include <fmt/format.h>
#include <turbojpeg.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>

#include "cvtrain/core/error.h"

#ifdef CVTRAIN_WITH_IMGCODECS
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace cvtrain {
namespace {

namespace fs = std::filesystem;

bool is_image_file(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* known : {".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff", ".ppm", ".pgm"})
    if (ext == known) return true;
  return false;
}

bool is_jpeg(const std::vector<uint8_t>& bytes) { return bytes.size() > 3 && bytes[0] == 0xFF && bytes[1] == 0xD8; }

struct TjCloser {
  void operator()(void* handle) const { tjDestroy(handle); }
};

Image decode_jpeg(const std::vector<uint8_t>& bytes, const std::string& name) {
  // One decompressor per thread: TurboJPEG handles are not thread-safe but are cheap to keep.
  thread_local std::unique_ptr<void, TjCloser> handle(tjInitDecompress());
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(handle.get(), bytes.data(), bytes.size(), &width, &height, &subsampling, &colorspace) != 0)
    throw Error(fmt::format("{}: not a readable JPEG ({})", name, tjGetErrorStr2(handle.get())));
  Image image{std::vector<uint8_t>(static_cast<size_t>(width) * height * 3), height, width, 3};
  if (tjDecompress2(handle.get(), bytes.data(), bytes.size(), image.pixels.data(), width, 0, height, TJPF_RGB, TJFLAG_ACCURATEDCT) != 0 &&
      tjGetErrorCode(handle.get()) == TJERR_FATAL)
    throw Error(fmt::format("{}: corrupt JPEG ({})", name, tjGetErrorStr2(handle.get())));
  return image;
}

}  // namespace

Image decode_image(const std::vector<uint8_t>& bytes, const std::string& name) {
  if (bytes.empty()) throw Error(fmt::format("{}: empty file", name));
  if (is_jpeg(bytes)) return decode_jpeg(bytes, name);
#ifdef CVTRAIN_WITH_IMGCODECS
  const cv::Mat raw(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<uint8_t*>(bytes.data()));
  cv::Mat decoded = cv::imdecode(raw, cv::IMREAD_COLOR);  // 8-bit BGR whatever the source depth
  if (decoded.empty()) throw Error(fmt::format("{}: not a readable image", name));
  cv::cvtColor(decoded, decoded, cv::COLOR_BGR2RGB);
  Image image{std::vector<uint8_t>(decoded.total() * 3), decoded.rows, decoded.cols, 3};
  std::copy(decoded.data, decoded.data + image.pixels.size(), image.pixels.begin());
  return image;
#else
  throw Error(fmt::format("{}: only JPEG can be decoded (this build has no OpenCV imgcodecs)", name));
#endif
}

ImageFolderDataset::ImageFolderDataset(const std::string& root, int64_t limit) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec))
    if (entry.is_directory()) classes_.push_back(entry.path().filename().string());
  if (ec) throw Error(fmt::format("{}: cannot list ({})", root, ec.message()));
  std::sort(classes_.begin(), classes_.end());
  if (classes_.empty()) throw Error(fmt::format("{}: no class folders (ImageFolder expects ROOT/CLASS/IMAGE)", root));
  for (size_t label = 0; label < classes_.size(); ++label) {
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(fs::path(root) / classes_[label]))
      if (entry.is_regular_file() && is_image_file(entry.path())) files.push_back(entry.path().string());
    if (files.empty()) throw Error(fmt::format("{}: class folder has no images", (fs::path(root) / classes_[label]).string()));
    std::sort(files.begin(), files.end());
    for (auto& f : files) {
      files_.push_back(std::move(f));
      labels_.push_back(static_cast<int64_t>(label));
    }
  }
  // A limit keeps a class-balanced prefix: taking every k-th file keeps all classes present.
  if (limit > 0 && static_cast<size_t>(limit) < files_.size()) {
    std::vector<std::string> kept_files;
    std::vector<int64_t> kept_labels;
    const double stride = static_cast<double>(files_.size()) / static_cast<double>(limit);
    for (int64_t i = 0; i < limit; ++i) {
      const auto at = static_cast<size_t>(static_cast<double>(i) * stride);
      kept_files.push_back(files_[at]);
      kept_labels.push_back(labels_[at]);
    }
    files_ = std::move(kept_files);
    labels_ = std::move(kept_labels);
  }
}

Image ImageFolderDataset::load(size_t index) const {
  std::ifstream in(files_[index], std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open", files_[index]));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return decode_image(bytes, files_[index]);
}

}  // namespace cvtrain
