// `cvtrain data inspect` for segmentation pairs: pixels per class, masks whose size differs from
// their image, ids that are no class, masks that cannot be read.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cvtrain/data/segmentation_dataset.h"

namespace cvtrain {

struct SegmentationInspectOptions {
  bool verify = false;  // every pair; else `samples` of them, spread over the set
  size_t samples = 1000;
  int64_t workers = 4;
  std::function<void(size_t done, size_t total)> progress;  // called as pairs are read, if set
};

struct SegmentationInspection {
  std::string path;
  std::string layout;   // "voc", ...
  bool packed = false;  // read from shards `cvtrain data pack` wrote
  size_t pairs = 0;
  size_t looked_at = 0;
  int64_t num_classes = 0;  // the classes checked against: the coding's, else the largest id seen + 1
  int ignore_index = 255;
  std::vector<std::string> class_names;      // one per class (numbers where the layout names none)
  std::array<uint64_t, 256> pixels{};        // per id, over the masks looked at
  std::array<uint64_t, 256> masks_with{};    // masks holding the id at all
  std::vector<std::string> size_mismatches;  // "MASK: 500x375, its image IMAGE 375x500"
  std::vector<std::string> unknown_ids;      // "MASK: id 151 (12 pixels) is not a class"
  std::vector<std::string> unreadable;       // why a pair could not be read

  bool usable() const { return size_mismatches.empty() && unknown_ids.empty() && unreadable.empty(); }
  // The report `data inspect` prints: classes by share of the labelled pixels, then the problems.
  std::string summary(bool all_classes = false) const;
  // The same facts as one JSON object.
  std::string json() const;
};

SegmentationInspection inspect_segmentation(const SegmentationDataset& dataset, const std::string& path,
                                            const SegmentationInspectOptions& options);

}  // namespace cvtrain
