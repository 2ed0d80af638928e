// `cvtrain data inspect`: what a dataset holds (samples per class, image formats, sizes and codings,
// how many a GPU decoder takes) and, when asked, which of its samples no longer read or decode.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cvtrain/data/dataset.h"
#include "cvtrain/data/duplicate_samples.h"

namespace cvtrain {

// Facts read from the samples looked at: every one with --verify, else a few spread over the set.
struct ImageCensus {
  size_t looked_at = 0;
  bool every_sample = false;
  uint64_t encoded_bytes = 0;                // of the samples looked at, as stored (0 for formats that hold pixels)
  std::vector<ImageSize> sizes;              // of those whose size is known (header or decode)
  std::map<std::string, size_t> formats;     // "JPEG", "PNG", ... "pixels"; "other" for what no header names
  std::map<std::string, size_t> jpeg_kinds;  // among JPEGs: "gray", "progressive", "CMYK", "12-bit", ...
  size_t gpu_decodable = 0;                  // JPEGs nvJPEG's batched decode takes (data.decoder: nvjpeg)
  size_t hardware_subsampling = 0;           // of those, in a chroma subsampling its hardware engine decodes
};

struct DatasetInspection {
  std::string path;
  std::string format;  // "shards", "ImageFolder", "IDX"
  size_t samples = 0;
  size_t shards = 0;                                      // the shards format's files; 0 for others
  uint64_t stored_bytes = 0;                              // of every image: exact for shards, else known only when every sample was read
  std::vector<std::pair<std::string, size_t>> per_class;  // class name, samples, in label order (classes without samples too)
  ImageCensus census;
  bool verified = false;
  std::vector<std::string> unreadable;  // why each unusable sample that was read failed
  SamplePrints prints;                  // with verify: every sample's content fingerprint and perceptual hash
  CopyFinding copies;                   // with verify: samples byte-identical to an earlier one
  CopyFinding look_alikes;              // with verify: samples that look like an earlier one, their bytes not the same

  // The names of the classes that hold no sample, in label order.
  std::vector<std::string> classes_without_samples() const;
  // An ImageFolder class folder without images, which training refuses.
  bool has_empty_class_folders() const { return format == "ImageFolder" && !classes_without_samples().empty(); }
  // The report `data inspect` prints; with many classes only the smallest and largest are listed
  // unless `all_classes`.
  std::string summary(bool all_classes = false) const;
  // The same facts as one JSON object (every class, the side quantiles as numbers, every
  // unreadable sample), for scripts; `against` (empty: none) is `--against`'s finding, as members.
  std::string json(const std::string& against = "") const;
};

// `--against`'s findings as JSON members ("against": {...}), for DatasetInspection::json.
std::string against_json(const std::string& other_path, size_t other_samples, const CopyFinding& leak, const CopyFinding& look_alikes);

struct InspectOptions {
  bool verify = false;                                // read and decode every sample (shards: and check its CRC-32C)
  int64_t workers = 1;                                // threads that read and decode
  int64_t max_image_pixels = kDefaultMaxImagePixels;  // larger images are unusable, on their header's size, as in training (0: no limit)
  size_t census_samples = 1000;                       // without verify: samples read for sizes and codings, spread evenly over the set
  // Called on the calling thread after each block with how many samples are read, of how many; unset: nothing.
  std::function<void(size_t done, size_t total)> progress;
};

// `dataset` was opened from `path` (for the report's first line).
DatasetInspection inspect_dataset(const Dataset& dataset, const std::string& path, const InspectOptions& options = {});

}  // namespace cvtrain
