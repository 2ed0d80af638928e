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
#include "cvtrain/core/text_file.h"
#include "cvtrain/data/image_decode.h"
#include "cvtrain/data/image_views.h"
#include "cvtrain/data/image_header.h"
#include "cvtrain/data/jpeg_coding.h"
#include "cvtrain/data/strided_threads.h"

namespace cvtrain {
namespace {

namespace fs = std::filesystem;

// Version 1's index entries have no checksum; version 2 (written since) adds each sample's CRC-32C.
constexpr char kMagicV1[8] = {'C', 'V', 'T', 'S', 'H', 'R', 'D', '1'};
constexpr char kMagicV2[8] = {'C', 'V', 'T', 'S', 'H', 'R', 'D', '2'};
constexpr char kMagicPairs[8] = {'C', 'V', 'T', 'P', 'A', 'I', 'R', '1'};
constexpr size_t kFooterBytes = 24;
constexpr size_t kIndexEntryBytesV1 = 16;
constexpr size_t kIndexEntryBytesV2 = 20;
constexpr size_t kIndexEntryBytesPairs = 32;
constexpr const char* kPairsFile = "pairs.txt";

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

// What a shard's footer says it holds.
enum class ShardVersion { kUnchecked, kChecked, kPairs };

std::optional<ShardVersion> version_of(const uint8_t* magic) {
  if (std::memcmp(magic, kMagicV2, sizeof kMagicV2) == 0) return ShardVersion::kChecked;
  if (std::memcmp(magic, kMagicPairs, sizeof kMagicPairs) == 0) return ShardVersion::kPairs;
  if (std::memcmp(magic, kMagicV1, sizeof kMagicV1) == 0) return ShardVersion::kUnchecked;
  return std::nullopt;
}

size_t index_entry_bytes(ShardVersion version) {
  switch (version) {
    case ShardVersion::kUnchecked:
      return kIndexEntryBytesV1;
    case ShardVersion::kChecked:
      return kIndexEntryBytesV2;
    case ShardVersion::kPairs:
      return kIndexEntryBytesPairs;
  }
  return kIndexEntryBytesV2;
}

// A shard holding the other kind of samples than the reader wants: what to do instead.
std::string wrong_contents(const std::string& path, ShardContents wanted) {
  if (wanted == ShardContents::kPairs)
    return fmt::format(
        "{}: holds images with class labels, not segmentation pairs; pack pairs from a VOC split file, an ADE20K or "
        "Cityscapes split folder or an image,mask list (`cvtrain data pack SRC DST`), or train it with task: classification",
        path);
  return fmt::format("{}: holds segmentation pairs (images with masks); read it with task: segmentation", path);
}

}  // namespace

std::optional<std::string> packed_pairs_layout(const std::string& dir) {
  const std::optional<std::string> text = read_text_file((fs::path(dir) / kPairsFile).string());
  if (!text) return std::nullopt;
  const auto end = text->find_last_not_of(" \t\r\n");
  return end == std::string::npos ? std::string() : text->substr(0, end + 1);
}

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

ShardDataset::ShardDataset(const std::string& dir, int64_t limit, ShardContents contents) : dir_(dir), classes_(shard_classes(dir)) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".cvts") shard_paths_.push_back(entry.path().string());
  if (ec) throw IoError(fmt::format("{}: cannot list ({})", dir, ec.message()));
  std::sort(shard_paths_.begin(), shard_paths_.end());
  if (shard_paths_.empty()) throw Error(fmt::format("{}: no shard-*.cvts files", dir));
  for (uint32_t k = 0; k < shard_paths_.size(); ++k) read_index(k, contents);
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

void ShardDataset::read_index(uint32_t shard, ShardContents contents) {
  const std::string& path = shard_paths_[shard];
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
  fds_.push_back(fd);
  const off_t file_size = ::lseek(fd, 0, SEEK_END);
  if (file_size < static_cast<off_t>(kFooterBytes)) throw Error(fmt::format("{}: too short to be a shard", path));
  uint8_t footer[kFooterBytes];
  read_exactly(fd, footer, kFooterBytes, static_cast<uint64_t>(file_size) - kFooterBytes, path);
  // The footer is written last: without it the file is cut short (an interrupted pack or copy) or no shard.
  const std::optional<ShardVersion> version = version_of(footer + 16);
  if (!version)
    throw Error(fmt::format("{}: no shard footer at its end: the file is truncated (an interrupted pack or copy) or not a cvtrain "
                            "shard; copy it again or rebuild the folder with cvtrain data pack",
                            path));
  const uint64_t count = get_u64(footer), index_offset = get_u64(footer + 8);
  const auto index_end = static_cast<uint64_t>(file_size) - kFooterBytes;
  if ((*version == ShardVersion::kPairs) != (contents == ShardContents::kPairs)) throw Error(wrong_contents(path, contents));
  const bool checksummed = *version != ShardVersion::kUnchecked, pairs = *version == ShardVersion::kPairs;
  const size_t entry_bytes = index_entry_bytes(*version);
  if (index_offset > index_end || (index_end - index_offset) / entry_bytes != count || (index_end - index_offset) % entry_bytes)
    throw Error(fmt::format("{}: index of {} entries does not fit the file (truncated or overwritten?)", path, count));
  std::vector<uint8_t> index(index_end - index_offset);
  read_exactly(fd, index.data(), index.size(), index_offset, path);
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* e = index.data() + i * entry_bytes;
    Entry entry{shard, static_cast<uint32_t>(i), get_u64(e), get_u32(e + 8), 0, 0, checksummed};
    if (pairs) {
      entry.checksum = get_u32(e + 12);
      entry.mask_offset = get_u64(e + 16), entry.mask_size = get_u32(e + 24), entry.mask_checksum = get_u32(e + 28);
    } else {
      entry.label = get_u32(e + 12);
      entry.checksum = checksummed ? get_u32(e + 16) : 0;
    }
    if (entry.offset + entry.size > index_offset || entry.mask_offset + entry.mask_size > index_offset)
      throw Error(fmt::format("{}: sample {} lies outside the data section", path, i));
    if (!pairs && entry.label >= classes_.size())
      throw Error(fmt::format("{}: sample {} has label {} but classes.txt lists {} classes", path, i, entry.label, classes_.size()));
    entries_.push_back(entry);
  }
}

std::vector<uint8_t> ShardDataset::read_checked(uint32_t shard, uint64_t offset, uint32_t size, uint32_t checksum, bool checksummed,
                                                const std::string& name) const {
  std::vector<uint8_t> bytes(size);
  read_exactly(fds_[shard], bytes.data(), size, offset, name);
  if (checksummed && crc32c(bytes.data(), size) != checksum)
    throw Error(
        fmt::format("{}: its bytes changed since it was packed (CRC-32C {:08x}, packed as {:08x}): a damaged copy or disk; "
                    "copy the shard again, or repack (`cvtrain data inspect --verify` lists every damaged sample)",
                    name, crc32c(bytes.data(), size), checksum));
  return bytes;
}

RawSample ShardDataset::read(size_t index) const {
  const Entry& e = entries_[index];
  RawSample sample;
  sample.encoded = read_checked(e.shard, e.offset, e.size, e.checksum, e.checksummed, describe(index));
  return sample;
}

std::vector<uint8_t> ShardDataset::read_mask(size_t index) const {
  const Entry& e = entries_[index];
  return read_checked(e.shard, e.mask_offset, e.mask_size, e.mask_checksum, true, describe_mask(index));
}

std::string ShardDataset::describe(size_t index) const {
  const Entry& e = entries_[index];
  return fmt::format("{} #{}", shard_paths_[e.shard], e.position);
}

std::string ShardDataset::describe_mask(size_t index) const { return describe(index) + " mask"; }

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

// One sample as a shard stores it.
struct Packed {
  std::vector<uint8_t> bytes;
  bool reencoded = false;
  bool transcoded = false;
  ImageSize size;             // the stored image's
  std::vector<uint8_t> mask;  // pairs: the mask file
  uint32_t label = 0;         // labelled images
};

// Makes sample i's record; throws Error for an unusable sample (skipped with a warning).
using SamplePacker = std::function<Packed(size_t)>;

Packed image_record(std::vector<uint8_t> bytes, ImageSize size, bool reencoded, bool transcoded) {
  Packed packed;
  packed.bytes = std::move(bytes);
  packed.size = size;
  packed.reencoded = reencoded;
  packed.transcoded = transcoded;
  return packed;
}

// A JPEG that needs no resize: byte for byte, or a progressive one as baseline (same pixels).
Packed stored_as_is(std::vector<uint8_t> jpeg, ImageSize size, const std::string& name, const PackOptions& options) {
  const auto coding = jpeg_coding(jpeg);
  if (options.keep_progressive || !coding || !progressive_to_transcode(*coding)) return image_record(std::move(jpeg), size, false, false);
  return image_record(transcode_to_baseline(jpeg, name), size, false, true);
}

// The bytes stored for one sample: the original JPEG when it needs no change (any original file
// with keep_other_formats), else a new JPEG.
Packed pack_image(const Dataset& source, size_t index, const PackOptions& options) {
  RawSample raw = source.read(index);
  const std::string name = source.describe(index);
  if (!raw.has_pixels()) {
    const auto size = jpeg_size(raw.encoded, name);
    // Refused on the header, as training refuses it, before a decode allocates a bomb's pixels.
    if (const auto header = size ? size : image_header_size(raw.encoded)) check_image_pixels(*header, options.max_image_pixels, name);
    const bool small_enough = size && (options.resize <= 0 || std::min(size->width, size->height) <= options.resize);
    if (small_enough) {
      decode_view(raw.encoded, name, ImageView::exact);  // a corrupt file is skipped now, not at training time
      return stored_as_is(std::move(raw.encoded), *size, name, options);
    }
    raw.image = decode_view(raw.encoded, name, ImageView::exact);
    if (options.keep_other_formats && options.resize <= 0)
      return image_record(std::move(raw.encoded), ImageSize{raw.image.width, raw.image.height}, false, false);
  }
  const Image stored = shrink_shorter_side(raw.image, static_cast<int>(options.resize));
  return image_record(encode_jpeg(stored, static_cast<int>(options.quality)), ImageSize{stored.width, stored.height}, true, false);
}

// Only a previous pack's files (or an interrupted pack's .tmp) may be replaced in a pack folder.
bool is_pack_file(const fs::path& p) {
  return p.extension() == ".cvts" || p.extension() == ".tmp" || p.filename() == "classes.txt" || p.filename() == kPairsFile;
}

// Samples [first, last) packed by `workers` threads; nullopt for an unusable one (warned). Anything
// else a thread meets (storage lost, memory) ends the pack with its message.
std::vector<std::optional<Packed>> pack_block(const SamplePacker& pack, size_t first, size_t last, size_t workers) {
  std::vector<std::optional<Packed>> packed(last - first);
  for_each_strided(first, last, workers, [&](size_t i) {
    try {
      packed[i - first] = pack(i);
    } catch (const Error& e) {
      log::warn("skipping unusable sample: {}", e.what());
    }
  });
  return packed;
}

void put_record(std::ofstream& out, std::string& index, uint64_t& offset, const std::vector<uint8_t>& bytes) {
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  put_u64(index, offset);
  put_u32(index, static_cast<uint32_t>(bytes.size()));
  offset += bytes.size();
}

// Writes samples [begin, end) of `total` as one shard file at `path` (pairs: image and mask records).
PackReport write_shard(const SamplePacker& pack, size_t total, bool pairs, size_t begin, size_t end, const std::string& path,
                       const PackOptions& options) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(fmt::format("{}: cannot write", path));
  PackReport report;
  std::string index;
  uint64_t offset = 0, count = 0;
  const auto workers = static_cast<size_t>(std::max<int64_t>(1, options.workers));
  const size_t block = 64 * workers;
  for (size_t first = begin; first < end; first += block) {
    const size_t last = std::min(end, first + block);
    const std::vector<std::optional<Packed>> packed = pack_block(pack, first, last, workers);
    for (size_t i = first; i < last; ++i) {
      if (!packed[i - first]) {
        ++report.skipped;
        continue;
      }
      const Packed& p = *packed[i - first];
      put_record(out, index, offset, p.bytes);
      if (!pairs) put_u32(index, p.label);
      put_u32(index, crc32c(p.bytes.data(), p.bytes.size()));
      if (pairs) {
        put_record(out, index, offset, p.mask);
        put_u32(index, crc32c(p.mask.data(), p.mask.size()));
      }
      ++count;
      report.reencoded += p.reencoded ? 1 : 0;
      report.transcoded += p.transcoded ? 1 : 0;
    }
    if (options.progress) options.progress(last, total);  // shards cover [0, n) in order: `last` are done
  }
  std::string footer;
  put_u64(footer, count);
  put_u64(footer, offset);
  footer.append(pairs ? kMagicPairs : kMagicV2, sizeof kMagicV2);
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
  std::error_code ec;
  if (fs::exists(fs::path(dir) / (std::string(kPairsFile) + ".tmp"), ec))
    fs::rename(fs::path(dir) / (std::string(kPairsFile) + ".tmp"), fs::path(dir) / kPairsFile);
  else
    fs::remove(fs::path(dir) / kPairsFile, ec);
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) throw Error(fmt::format("{}: write failed", path));
}

// The shards of `total` samples made by `pack`, then classes.txt (and pairs.txt naming `layout`),
// all as .tmp until the earlier pack is replaced at once.
PackReport write_pack(const SamplePacker& pack, size_t total, const std::vector<std::string>& class_names, const std::string& layout,
                      const std::string& dir, const PackOptions& options) {
  // classes.txt holds one name a line: a name with a line break in it would shift every label after it.
  for (const std::string& name : class_names)
    if (name.find_first_of("\r\n") != std::string::npos)
      throw Error(fmt::format("class name '{}' holds a line break, which classes.txt cannot keep; rename that class folder", name));
  prepare_pack_folder(dir);
  // Everything is written as .tmp first, so a pack that fails or is interrupted leaves the folder's
  // earlier pack whole (and a folder packed onto itself is read to the end before it is replaced).
  PackReport report;
  const size_t n = total;
  const auto shards = static_cast<size_t>(std::clamp<int64_t>(options.shards, 1, static_cast<int64_t>(std::max<size_t>(n, 1))));
  for (size_t k = 0; k < shards; ++k) {
    const PackReport shard = write_shard(pack, total, !layout.empty(), k * n / shards, (k + 1) * n / shards,
                                         (fs::path(dir) / shard_name(k)).string() + ".tmp", options);
    report.written += shard.written;
    report.skipped += shard.skipped;
    report.reencoded += shard.reencoded;
    report.transcoded += shard.transcoded;
    report.bytes += shard.bytes;
  }
  std::string names;
  for (const auto& name : class_names) names += name + "\n";
  write_text((fs::path(dir) / "classes.txt.tmp").string(), names);
  if (!layout.empty()) write_text((fs::path(dir) / kPairsFile).string() + ".tmp", layout + "\n");
  replace_earlier_pack(dir, shards);
  return report;
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
      throw Error(
          fmt::format("{}: holds other files ({}); pack into an empty or shard-only folder", dir, entry.path().filename().string()));
    if (entry.path().extension() == ".tmp") interrupted.push_back(entry.path());
  }
  for (const auto& path : interrupted) fs::remove(path);
}

PackReport pack_shards(const Dataset& source, const std::vector<std::string>& class_names, const std::string& dir,
                       const PackOptions& options) {
  const SamplePacker pack = [&](size_t i) {
    Packed packed = pack_image(source, i, options);
    packed.label = static_cast<uint32_t>(source.label(i));
    return packed;
  };
  return write_pack(pack, source.size(), class_names, "", dir, options);
}

PackReport pack_pair_shards(const Dataset& images, const PackedMask& masks, const std::vector<std::string>& class_names,
                            const std::string& layout, const std::string& dir, const PackOptions& options) {
  if (options.resize > 0) throw Error("--resize cannot pack segmentation pairs: masks are never resampled; pack them at their size");
  PackOptions kept = options;
  kept.keep_other_formats = true;
  const SamplePacker pack = [&](size_t i) {
    Packed packed = pack_image(images, i, kept);
    packed.mask = masks(i, packed.size);
    return packed;
  };
  return write_pack(pack, images.size(), class_names, layout, dir, kept);
}

}  // namespace cvtrain
