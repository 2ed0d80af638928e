// ImageFolder scanning; samples are read as encoded bytes and decoded by the loader.
#include "cvtrain/data/image_folder.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"

namespace cvtrain {
namespace {

namespace fs = std::filesystem;

// torchvision's IMG_EXTENSIONS, matched in any case.
constexpr std::array<const char*, 9> kImageExtensions{".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff", ".ppm", ".pgm"};

bool is_image_file(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return std::any_of(kImageExtensions.begin(), kImageExtensions.end(), [&](const char* known) { return ext == known; });
}

// A dot-named entry (.ipynb_checkpoints, .DS_Store, macOS's ._IMG.jpg, .Trash): notebook, editor and
// OS metadata, never a class or an image. torchvision's ImageFolder takes such a folder as a class
// (shifting every label after it) and such a file as an image; Keras' loader leaves hidden folders out.
bool is_hidden(const fs::path& path) {
  const std::string name = path.filename().string();
  return !name.empty() && name.front() == '.';
}

// The folders under `top`, `top` included, at any depth in path order: the order of torchvision's
// sorted(os.walk(top, followlinks=True)), hidden ones left out (added to `hidden`). A folder reached
// again through a link is walked once, so a link back up cannot loop.
std::vector<fs::path> folders_under(const fs::path& top, std::vector<std::string>& hidden) {
  std::vector<fs::path> folders{top};
  std::error_code ec;
  std::set<fs::path> seen{fs::weakly_canonical(top, ec)};
  for (size_t i = 0; i < folders.size(); ++i) {
    for (const auto& entry : fs::directory_iterator(folders[i], ec)) {
      std::error_code entry_ec;
      if (!entry.is_directory(entry_ec)) continue;  // follows links, as followlinks=True
      if (is_hidden(entry.path())) {
        hidden.push_back(entry.path().string());
        continue;
      }
      const fs::path real = fs::canonical(entry.path(), entry_ec);
      if (!entry_ec && seen.insert(real).second) folders.push_back(entry.path());
    }
    if (ec) throw IoError(fmt::format("{}: cannot list ({})", folders[i].string(), ec.message()));
  }
  std::sort(folders.begin(), folders.end(), [](const fs::path& a, const fs::path& b) { return a.string() < b.string(); });
  return folders;
}

// What a tree holds besides the samples, for one note.
struct LeftOut {
  std::vector<std::string> dangling;  // links to nothing, kept as samples (see class_images)
  std::vector<std::string> hidden;    // dot-named folders and image files, left out
};

// One class's image files in torchvision's order: folder by folder (folders_under), names sorted
// within each. A link to nothing is kept, as torchvision keeps it, and also noted.
std::vector<std::string> class_images(const fs::path& class_folder, LeftOut& left_out) {
  std::vector<std::string> files;
  for (const fs::path& folder : folders_under(class_folder, left_out.hidden)) {
    std::vector<std::string> here;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(folder, ec)) {
      if (!is_image_file(entry.path())) continue;
      if (is_hidden(entry.path())) {
        left_out.hidden.push_back(entry.path().string());
        continue;
      }
      std::error_code link_ec;
      if (entry.is_regular_file(link_ec)) {
        here.push_back(entry.path().string());
      } else if (entry.is_symlink(link_ec) && !fs::exists(entry.path(), link_ec)) {
        // Reading it fails, and the run's bad-sample count (data.max_bad_fraction) takes it, naming the file.
        here.push_back(entry.path().string());
        left_out.dangling.push_back(entry.path().string());
      }
    }
    if (ec) throw IoError(fmt::format("{}: cannot list ({})", folder.string(), ec.message()));
    std::sort(here.begin(), here.end());
    files.insert(files.end(), here.begin(), here.end());
  }
  return files;
}

std::vector<std::string> class_folders(const std::string& root, std::vector<std::string>& hidden) {
  std::vector<std::string> classes;
  size_t loose_images = 0;  // images right in ROOT, as ImageNet's val/ ships
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (!entry.is_directory()) {
      loose_images += is_image_file(entry.path()) && !is_hidden(entry.path()) ? 1 : 0;
      continue;
    }
    if (is_hidden(entry.path()))
      hidden.push_back(entry.path().string());
    else
      classes.push_back(entry.path().filename().string());
  }
  if (ec) throw IoError(fmt::format("{}: cannot list ({})", root, ec.message()));
  std::sort(classes.begin(), classes.end());
  if (classes.empty())
    throw Error(fmt::format("{}: no class folders (ImageFolder expects ROOT/CLASS/IMAGE){}", root,
                            loose_images > 0 ? fmt::format("; its {} images lie in it directly, as ImageNet's val/ ships: move each "
                                                           "into a folder named after its class first",
                                                           loose_images)
                                             : ""));
  return classes;
}

void note_left_out(const std::string& root, const LeftOut& left_out) {
  if (!left_out.hidden.empty())
    log::info(
        "{}: {} hidden folder(s) and file(s) left out, e.g. {} (names starting with '.' are notebook, editor and OS "
        "metadata, not classes or images)",
        root, left_out.hidden.size(), left_out.hidden.front());
  if (!left_out.dangling.empty())
    log::warn("{}: {} image name(s) are symbolic links to nothing, e.g. {}; they count as unreadable samples", root,
              left_out.dangling.size(), left_out.dangling.front());
}

// What an image-less class folder holds instead, by extension ("3 .heic, 1 .txt"), or "nothing".
std::string other_files_in(const fs::path& class_folder) {
  std::map<std::string, size_t> by_extension;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(class_folder, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code entry_ec;
    if (it->is_regular_file(entry_ec) && !is_hidden(it->path()))
      ++by_extension[it->path().has_extension() ? it->path().extension().string() : "(no extension)"];
  }
  std::vector<std::pair<std::string, size_t>> counts(by_extension.begin(), by_extension.end());
  std::stable_sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string held;
  for (size_t i = 0; i < counts.size() && i < 3; ++i)
    held += fmt::format("{}{} {}", held.empty() ? "" : ", ", counts[i].second, counts[i].first);
  return held.empty() ? "nothing" : held;
}

// Every image-less class at once, each with what it holds, so one look fixes the tree.
[[noreturn]] void refuse_empty_classes(const std::string& root, const std::vector<std::string>& empty) {
  constexpr size_t kNamed = 5;
  std::string named;
  for (size_t i = 0; i < empty.size() && i < kNamed; ++i)
    named += fmt::format("\n  {} (holds {})", empty[i], other_files_in(fs::path(root) / empty[i]));
  if (empty.size() > kNamed) named += fmt::format("\n  ... and {} more", empty.size() - kNamed);
  throw Error(
      fmt::format("{}: {} class folder(s) hold no image file ({} at any depth), and a class needs one (torchvision's "
                  "ImageFolder refuses them too): convert their files, or move the folders out of {}; `cvtrain data inspect "
                  "{}` shows every class{}",
                  root, empty.size(), fmt::join(kImageExtensions, ", "), root, root, named));
}

}  // namespace

std::vector<std::string> image_files_under(const std::string& folder) {
  LeftOut left_out;
  return class_images(folder, left_out);
}

std::vector<std::string> image_folder_classes(const std::string& root) {
  std::vector<std::string> hidden;
  return class_folders(root, hidden);
}

ImageFolderDataset::ImageFolderDataset(const std::string& root, int64_t limit, EmptyClasses empty) {
  LeftOut left_out;
  classes_ = class_folders(root, left_out.hidden);
  std::vector<std::string> without_images;
  for (size_t label = 0; label < classes_.size(); ++label) {
    const fs::path folder = fs::path(root) / classes_[label];
    std::vector<std::string> files = class_images(folder, left_out);
    if (files.empty()) without_images.push_back(classes_[label]);
    for (auto& f : files) {
      files_.push_back(std::move(f));
      labels_.push_back(static_cast<int64_t>(label));
    }
  }
  if (!without_images.empty() && empty == EmptyClasses::kRefused) refuse_empty_classes(root, without_images);
  note_left_out(root, left_out);
  keep_spread(files_, labels_, limit);
}

void keep_spread(std::vector<std::string>& files, std::vector<int64_t>& labels, int64_t limit) {
  if (limit <= 0 || static_cast<size_t>(limit) >= files.size()) return;
  std::vector<std::string> kept_files;
  std::vector<int64_t> kept_labels;
  const double stride = static_cast<double>(files.size()) / static_cast<double>(limit);
  for (int64_t i = 0; i < limit; ++i) {
    const auto at = static_cast<size_t>(static_cast<double>(i) * stride);
    kept_files.push_back(files[at]);
    kept_labels.push_back(labels[at]);
  }
  files = std::move(kept_files);
  labels = std::move(kept_labels);
}

RawSample ImageFolderDataset::read(size_t index) const {
  RawSample sample;
  sample.encoded = read_file_bytes(files_[index]);
  return sample;
}

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
  struct stat st {};
  std::vector<uint8_t> bytes;
  if (::fstat(fd, &st) == 0) bytes.resize(static_cast<size_t>(st.st_size));
  size_t filled = 0;
  while (filled < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + filled, bytes.size() - filled);
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      if (n == 0) throw IoError(fmt::format("{}: file shrank while being read", path));
      throw IoError(fmt::format("{}: read error ({})", path, std::strerror(err)));
    }
    filled += static_cast<size_t>(n);
  }
  ::close(fd);
  return bytes;
}

}  // namespace cvtrain
