// Shard reading (pread on one descriptor per shard: thread-safe, no seeking) and packing.
#include "cvtrain/data/shard_dataset.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "cvtrain/core/crc32c.h"
#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/data/image_decode.h"
#include "cvtrain/data/image_header.h"
#include "cvtrain/data/jpeg_coding.h"
#include "cvtrain/data/strided_threads.h"

namespace cvtrain {
namespace {

namespace fs = std::filesystem;

// Version 1's index entries have no checksum; version 2 (written since) adds each sample's CRC-32C.
constexpr char kMagicV1[8] = {'C', 'V', 'T', 'S', 'H', 'R', 'D', '1'};
constexpr char kMagicV2[8] = {'C', 'V', 'T', 'S', 'H', 'R', 'D', '2'};
constexpr size_t kFooterBytes = 24;
constexpr size_t kIndexEntryBytesV1 = 16;
constexpr size_t kIndexEntryBytesV2 = 20;

uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint32_t get_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

void read_exactly(int fd, void* buffer, size_t size, uint64_t offset, const std::string& path) {
  auto* p = static_cast<uint8_t*>(buffer);
  while (size > 0) {
    const ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
    if (n < 0) throw IoError(fmt::format("{}: read error at byte {} ({})", path, offset, std::strerror(errno)));
    if (n == 0) throw Error(fmt::format("{}: short read at byte {} (end of file)", path, offset));
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

std::string shard_name(size_t k) { return fmt::format("shard-{:05d}.cvts", k); }

}  // namespace

std::vector<std::string> shard_classes(const std::string& dir) {
  std::error_code ec;
  if (fs::is_regular_file(dir, ec))
    throw Error(fmt::format("{}: is a file, not a shards folder (`cvtrain data pack SRC DST` writes one)", dir));
  std::ifstream names(fs::path(dir) / "classes.txt");
  if (!names) throw Error(fmt::format("{}: no classes.txt (not a folder written by `cvtrain data pack`)", dir));
  std::vector<std::string> classes;
  for (std::string line; std::getline(names, line);) classes.push_back(line);
  return classes;
}

ShardDataset::ShardDataset(const std::string& dir, int64_t limit) : dir_(dir), classes_(shard_classes(dir)) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".cvts") shard_paths_.push_back(entry.path().string());
  if (ec) throw IoError(fmt::format("{}: cannot list ({})", dir, ec.message()));
  std::sort(shard_paths_.begin(), shard_paths_.end());
  if (shard_paths_.empty()) throw Error(fmt::format("{}: no shard-*.cvts files", dir));
  for (uint32_t k = 0; k < shard_paths_.size(); ++k) read_index(k);
  if (entries_.empty()) throw Error(fmt::format("{}: the shards hold no samples", dir));
  if (limit > 0 && static_cast<size_t>(limit) < entries_.size()) {
    // Every k-th sample, as ImageFolder does, so a limited run keeps every class.
    std::vector<Entry> kept;
    const double stride = static_cast<double>(entries_.size()) / static_cast<double>(limit);
    for (int64_t i = 0; i < limit; ++i) kept.push_back(entries_[static_cast<size_t>(static_cast<double>(i) * stride)]);
    entries_ = std::move(kept);
  }
}

ShardDataset::~ShardDataset() {
  for (int fd : fds_) ::close(fd);
}

void ShardDataset::read_index(uint32_t shard) {
  const std::string& path = shard_paths_[shard];
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
  fds_.push_back(fd);
  const off_t file_size = ::lseek(fd, 0, SEEK_END);
  if (file_size < static_cast<off_t>(kFooterBytes)) throw Error(fmt::format("{}: too short to be a shard", path));
  uint8_t footer[kFooterBytes];
  read_exactly(fd, footer, kFooterBytes, static_cast<uint64_t>(file_size) - kFooterBytes, path);
  // The footer is written last: without it the file is cut short (an interrupted pack or copy) or no shard.
  const bool checksummed = std::memcmp(footer + 16, kMagicV2, sizeof kMagicV2) == 0;
  if (!checksummed && std::memcmp(footer + 16, kMagicV1, sizeof kMagicV1) != 0)
    throw Error(fmt::format("{}: no shard footer at its end: the file is truncated (an interrupted pack or copy) or not a cvtrain "
                            "shard; copy it again or rebuild the folder with cvtrain data pack",
                            path));
  const uint64_t count = get_u64(footer), index_offset = get_u64(footer + 8);
  const auto index_end = static_cast<uint64_t>(file_size) - kFooterBytes;
  const size_t entry_bytes = checksummed ? kIndexEntryBytesV2 : kIndexEntryBytesV1;
  if (index_offset > index_end || (index_end - index_offset) / entry_bytes != count || (index_end - index_offset) % entry_bytes)
    throw Error(fmt::format("{}: index of {} entries does not fit the file (truncated or overwritten?)", path, count));
  std::vector<uint8_t> index(index_end - index_offset);
  read_exactly(fd, index.data(), index.size(), index_offset, path);
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* e = index.data() + i * entry_bytes;
    Entry entry{shard,           static_cast<uint32_t>(i),          get_u64(e), get_u32(e + 8),
                get_u32(e + 12), checksummed ? get_u32(e + 16) : 0, checksummed};
    if (entry.offset + entry.size > index_offset)
      throw Error(fmt::format("{}: sample {} lies outside the data section", path, i));
    if (entry.label >= classes_.size())
      throw Error(fmt::format("{}: sample {} has label {} but classes.txt lists {} classes", path, i, entry.label, classes_.size()));
    entries_.push_back(entry);
  }
}

RawSample ShardDataset::read(size_t index) const {
  const Entry& e = entries_[index];
  RawSample sample;
  sample.encoded.resize(e.size);
  read_exactly(fds_[e.shard], sample.encoded.data(), e.size, e.offset, describe(index));
  if (e.checksummed && crc32c(sample.encoded.data(), e.size) != e.checksum)
    throw Error(
        fmt::format("{}: its bytes changed since it was packed (CRC-32C {:08x}, packed as {:08x}): a damaged copy or disk; "
                    "copy the shard again, or repack (`cvtrain data inspect --verify` lists every damaged sample)",
                    describe(index), crc32c(sample.encoded.data(), e.size), e.checksum));
  return sample;
}

std::string ShardDataset::describe(size_t index) const {
  const Entry& e = entries_[index];
  return fmt::format("{} #{}", shard_paths_[e.shard], e.position);
}

uint64_t ShardDataset::encoded_bytes() const {
  uint64_t total = 0;
  for (const Entry& e : entries_) total += e.size;
  return total;
}

namespace {

Image shrink_shorter_side(const Image& image, int target) {
  const int shorter = std::min(image.width, image.height);
  if (target <= 0 || shorter <= target) return image;
  const double scale = static_cast<double>(target) / shorter;
  const int w = std::max(1, static_cast<int>(std::lround(image.width * scale)));
  const int h = std::max(1, static_cast<int>(std::lround(image.height * scale)));
  const cv::Mat src(image.height, image.width, CV_8UC(image.channels), const_cast<uint8_t*>(image.pixels.data()));
  cv::Mat dst;
  cv::resize(src, dst, cv::Size(w, h), 0, 0, cv::INTER_AREA);
  return Image{std::vector<uint8_t>(dst.data, dst.data + dst.total() * dst.elemSize()), h, w, image.channels};
}

struct Packed {
  std::vector<uint8_t> bytes;
  bool reencoded = false;
  bool transcoded = false;
};

// A JPEG that needs no resize: byte for byte, or a progressive one as baseline (same pixels).
Packed stored_as_is(std::vector<uint8_t> jpeg, const std::string& name, const PackOptions& options) {
  const auto coding = jpeg_coding(jpeg);
  if (options.keep_progressive || !coding || !progressive_to_transcode(*coding)) return Packed{std::move(jpeg), false, false};
  return Packed{transcode_to_baseline(jpeg, name), false, true};
}

// The bytes stored for one sample: the original JPEG when it needs no change, else a new JPEG.
Packed pack_one(const Dataset& source, size_t index, const PackOptions& options) {
  RawSample raw = source.read(index);
  const std::string name = source.describe(index);
  if (!raw.has_pixels()) {
    const auto size = jpeg_size(raw.encoded, name);
    // Refused on the header, as training refuses it, before a decode allocates a bomb's pixels.
    if (const auto header = size ? size : image_header_size(raw.encoded)) check_image_pixels(*header, options.max_image_pixels, name);
    const bool small_enough = size && (options.resize <= 0 || std::min(size->width, size->height) <= options.resize);
    if (small_enough) {
      decode_image(raw.encoded, name);  // a corrupt file is skipped now, not at training time
      return stored_as_is(std::move(raw.encoded), name, options);
    }
    raw.image = decode_image(raw.encoded, name);
  }
  return Packed{encode_jpeg(shrink_shorter_side(raw.image, static_cast<int>(options.resize)), static_cast<int>(options.quality)), true};
}

// Only a previous pack's files (or an interrupted pack's .tmp) may be replaced in a pack folder.
bool is_pack_file(const fs::path& p) { return p.extension() == ".cvts" || p.extension() == ".tmp" || p.filename() == "classes.txt"; }

// Samples [first, last) packed by `workers` threads; nullopt for an unusable one (warned). Anything
// else a thread meets (storage lost, memory) ends the pack with its message.
std::vector<std::optional<Packed>> pack_block(const Dataset& source, size_t first, size_t last, size_t workers,
                                              const PackOptions& options) {
  std::vector<std::optional<Packed>> packed(last - first);
  for_each_strided(first, last, workers, [&](size_t i) {
    try {
      packed[i - first] = pack_one(source, i, options);
    } catch (const Error& e) {
      log::warn("skipping unusable sample: {}", e.what());
    }
  });
  return packed;
}

// Writes samples [begin, end) of `source` as one shard file at `path`.
PackReport write_shard(const Dataset& source, size_t begin, size_t end, const std::string& path, const PackOptions& options) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(fmt::format("{}: cannot write", path));
  PackReport report;
  std::string index;
  uint64_t offset = 0, count = 0;
  const auto workers = static_cast<size_t>(std::max<int64_t>(1, options.workers));
  const size_t block = 64 * workers;
  for (size_t first = begin; first < end; first += block) {
    const size_t last = std::min(end, first + block);
    const std::vector<std::optional<Packed>> packed = pack_block(source, first, last, workers, options);
    for (size_t i = first; i < last; ++i) {
      if (!packed[i - first]) {
        ++report.skipped;
        continue;
      }
      const Packed& p = *packed[i - first];
      out.write(reinterpret_cast<const char*>(p.bytes.data()), static_cast<std::streamsize>(p.bytes.size()));
      put_u64(index, offset);
      put_u32(index, static_cast<uint32_t>(p.bytes.size()));
      put_u32(index, static_cast<uint32_t>(source.label(i)));
      put_u32(index, crc32c(p.bytes.data(), p.bytes.size()));
      offset += p.bytes.size();
      ++count;
      report.reencoded += p.reencoded ? 1 : 0;
      report.transcoded += p.transcoded ? 1 : 0;
    }
    if (options.progress) options.progress(last, source.size());  // shards cover [0, n) in order: `last` are done
  }
  std::string footer;
  put_u64(footer, count);
  put_u64(footer, offset);
  footer.append(kMagicV2, sizeof kMagicV2);
  out.write(index.data(), static_cast<std::streamsize>(index.size()));
  out.write(footer.data(), static_cast<std::streamsize>(footer.size()));
  out.close();
  if (!out) throw Error(fmt::format("{}: write failed (disk full?)", path));
  report.written = count;
  report.bytes = offset + index.size() + footer.size();
  return report;
}

// Puts the finished .tmp files in place of the folder's earlier pack, which until now stayed whole.
void replace_earlier_pack(const std::string& dir, size_t shards) {
  std::vector<fs::path> earlier;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".cvts") earlier.push_back(entry.path());
  for (const auto& path : earlier) fs::remove(path);
  for (size_t k = 0; k < shards; ++k) {
    const fs::path final_path = fs::path(dir) / shard_name(k);
    fs::rename(final_path.string() + ".tmp", final_path);
  }
  fs::rename(fs::path(dir) / "classes.txt.tmp", fs::path(dir) / "classes.txt");
}

}  // namespace

void prepare_pack_folder(const std::string& dir) {
  if (fs::exists(dir) && !fs::is_directory(dir)) throw Error(fmt::format("{}: is a file; the shards go into a folder", dir));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(fmt::format("{}: cannot create ({})", dir, ec.message()));
  std::vector<fs::path> interrupted;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!is_pack_file(entry.path()))
      throw Error(fmt::format("{}: holds other files ({}); pack into an empty or shard-only folder", dir, entry.path().filename().string()));
    if (entry.path().extension() == ".tmp") interrupted.push_back(entry.path());
  }
  for (const auto& path : interrupted) fs::remove(path);
}

PackReport pack_shards(const Dataset& source, const std::vector<std::string>& class_names, const std::string& dir,
                       const PackOptions& options) {
  // classes.txt holds one name a line: a name with a line break in it would shift every label after it.
  for (const std::string& name : class_names)
    if (name.find_first_of("\r\n") != std::string::npos)
      throw Error(fmt::format("class name '{}' holds a line break, which classes.txt cannot keep; rename that class folder", name));
  prepare_pack_folder(dir);
  // Everything is written as .tmp first, so a pack that fails or is interrupted leaves the folder's
  // earlier pack whole (and a folder packed onto itself is read to the end before it is replaced).
  PackReport report;
  const size_t n = source.size();
  const auto shards = static_cast<size_t>(std::clamp<int64_t>(options.shards, 1, static_cast<int64_t>(std::max<size_t>(n, 1))));
  for (size_t k = 0; k < shards; ++k) {
    const PackReport shard =
        write_shard(source, k * n / shards, (k + 1) * n / shards, (fs::path(dir) / shard_name(k)).string() + ".tmp", options);
    report.written += shard.written;
    report.skipped += shard.skipped;
    report.reencoded += shard.reencoded;
    report.transcoded += shard.transcoded;
    report.bytes += shard.bytes;
  }
  const std::string names_path = (fs::path(dir) / "classes.txt.tmp").string();
  std::ofstream names(names_path);
  for (const auto& name : class_names) names << name << "\n";
  names.close();
  if (!names) throw Error(fmt::format("{}: write failed", names_path));
  replace_earlier_pack(dir, shards);
  return report;
}

}  // namespace cvtrain
