// Packed shards: a dataset as a few large files of encoded images, so a job opens N files instead
// of millions. Layout of DIR: classes.txt (one class name per line, line i = label i) and
// shard-00000.cvts, shard-00001.cvts, ...; each shard is the images' bytes back to back, then an
// index of (offset u64, size u32, label u32, CRC-32C of the bytes u32) per image, then a 24-byte
// footer: count u64, index offset u64, magic "CVTSHRD2" (all little-endian). Written by `cvtrain
// data pack`. Shards of version 1 ("CVTSHRD1", index entries without the checksum) still read.
// A sample whose bytes no longer match their checksum is unreadable, as a corrupt image is.
// Segmentation pairs ("CVTPAIR1") store each image's bytes followed by its mask file's, both as
// they were, and index entries of (image offset u64, size u32, CRC-32C u32, mask offset u64, size
// u32, CRC-32C u32); DIR's pairs.txt names the layout they were packed from (voc, ade20k,
// cityscapes, list), which decides how their masks' colours read, as it does for the files.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cvtrain/data/dataset.h"

namespace cvtrain {

// DIR's classes.txt: line i names label i. Throws Error when DIR has none.
std::vector<std::string> shard_classes(const std::string& dir);

// DIR's pairs.txt: the layout its segmentation pairs were packed from; nullopt for shards of labelled images.
std::optional<std::string> packed_pairs_layout(const std::string& dir);

enum class ShardContents { kLabelledImages, kPairs };

class ShardDataset : public Dataset {
 public:
  // Reads every shard's index; throws Error naming the shard for a malformed one, and naming what
  // the folder holds when that is not `contents` (pairs read as classification, or the other way).
  ShardDataset(const std::string& dir, int64_t limit, ShardContents contents = ShardContents::kLabelledImages);
  ~ShardDataset() override;
  ShardDataset(const ShardDataset&) = delete;
  ShardDataset& operator=(const ShardDataset&) = delete;
  size_t size() const override { return entries_.size(); }
  int64_t label(size_t index) const override { return entries_[index].label; }
  int64_t num_classes() const override { return static_cast<int64_t>(classes_.size()); }
  int channels() const override { return 3; }
  RawSample read(size_t index) const override;
  std::string describe(size_t index) const override;
  // Pairs: sample `index`'s mask file as packed (its CRC-32C checked), and its name for messages.
  std::vector<uint8_t> read_mask(size_t index) const;
  std::string describe_mask(size_t index) const;
  std::vector<std::string> class_names() const override { return classes_; }
  const std::vector<std::string>& shard_files() const { return shard_paths_; }
  uint64_t encoded_bytes() const;

 private:
  struct Entry {
    uint32_t shard;
    uint32_t position;  // within its shard
    uint64_t offset;
    uint32_t size;
    uint32_t label;
    uint32_t checksum;  // CRC-32C of the bytes, where `checksummed` (version 2)
    bool checksummed;
    uint64_t mask_offset = 0;  // pairs
    uint32_t mask_size = 0;
    uint32_t mask_checksum = 0;
  };
  void read_index(uint32_t shard, ShardContents contents);
  std::vector<uint8_t> read_checked(uint32_t shard, uint64_t offset, uint32_t size, uint32_t checksum, bool checksummed,
                                    const std::string& name) const;

  std::string dir_;
  std::vector<std::string> classes_;
  std::vector<std::string> shard_paths_;
  std::vector<int> fds_;
  std::vector<Entry> entries_;
};

struct PackOptions {
  int64_t shards = 1;
  int64_t resize = 0;     // > 0: shorter side reduced to this many pixels (never enlarged)
  int64_t quality = 90;   // JPEG quality for re-encoded images
  int64_t workers = 2;    // decode/encode threads
  int64_t max_image_pixels = kDefaultMaxImagePixels;  // larger images are skipped as unusable, on their header's size (0 = no limit)
  bool keep_progressive = false;  // store progressive JPEGs as they are rather than transcoded to baseline (same pixels)
  bool keep_other_formats = false;  // store images that are no JPEG (PNG) byte for byte too, rather than as new JPEGs
  // Called on the packing thread after each block of samples with how many of the source's are done
  // (written or skipped) and their total, the last call with all of them; unset: nothing.
  std::function<void(size_t done, size_t total)> progress;
};

struct PackReport {
  size_t written = 0;
  size_t skipped = 0;     // unreadable source samples, each named in a warning
  size_t reencoded = 0;   // not JPEG, or resized
  size_t transcoded = 0;  // progressive JPEGs stored as baseline ones, without loss
  uint64_t bytes = 0;
};

// Creates DIR for a pack, or refuses it when it holds anything but an earlier pack's files.
void prepare_pack_folder(const std::string& dir);

// Packs `source` (its classes given by `class_names`) into DIR, samples in source order. JPEGs
// that need no resize are stored byte for byte, progressive ones (unless kept) transcoded to
// baseline without loss (jpeg_coding.h: the same pixels, decoded faster). Refuses a DIR that holds anything but shards;
// DIR's earlier pack is replaced only once the new one is complete.
PackReport pack_shards(const Dataset& source, const std::vector<std::string>& class_names, const std::string& dir,
                       const PackOptions& options);

// Sample `index`'s mask file, checked against its image's size; throws Error naming what is wrong,
// and the pair is skipped as unusable.
using PackedMask = std::function<std::vector<uint8_t>(size_t index, ImageSize image)>;

// Packs segmentation pairs as pack_shards packs images (`images` gives each pair's image, `masks`
// its mask), with DIR's pairs.txt naming `layout`. Images are stored byte for byte whatever their
// format (progressive JPEGs transcoded to baseline as above), masks as they are: the shards read
// back the same pixels and ids as the files. options.resize is refused: a mask is never resampled.
PackReport pack_pair_shards(const Dataset& images, const PackedMask& masks, const std::vector<std::string>& class_names,
                            const std::string& layout, const std::string& dir, const PackOptions& options);

}  // namespace cvtrain
