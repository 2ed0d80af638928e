// Byte-identical samples, within a dataset and between two: copies that weigh one image more than
// the others, the same image under two classes (label noise), and validation images that are
// training images (a leak that inflates the validation figures). For `cvtrain data inspect --verify`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cvtrain/data/dataset.h"

namespace cvtrain {

// A 64-bit hash of a sample's stored bytes (its pixels, for formats that hold pixels) and their
// count: equal for identical samples; for different ones, equal by chance about once in 2^64.
uint64_t content_fingerprint(const RawSample& sample);

// One fingerprint per sample, in order; nullopt for a sample that could not be read.
using Fingerprints = std::vector<std::optional<uint64_t>>;

struct CopyFinding {
  size_t copies = 0;                              // samples whose content equals that of a sample met before (or of the other set)
  size_t other_class = 0;                         // of them, under another class name
  std::vector<std::string> other_class_examples;  // the first few, "b.jpg (dog) = a.jpg (cat)"
  std::vector<std::string> same_class_examples;   // "b.jpg = a.jpg"
};

// The finding's examples as indented lines, those under another class first.
std::string example_lines(const CopyFinding& finding);

// Within one set: each sample against the earlier ones.
CopyFinding copies_within(const Fingerprints& prints, const Dataset& set);

// Samples of `other` whose content is that of a sample of `set`.
CopyFinding copies_between(const Fingerprints& set_prints, const Dataset& set, const Fingerprints& other_prints, const Dataset& other);

// Every sample of `set` read (not decoded) and fingerprinted on `workers` threads; `progress` as
// InspectOptions's (unset: nothing).
Fingerprints fingerprint_all(const Dataset& set, int64_t workers, const std::function<void(size_t, size_t)>& progress);

}  // namespace cvtrain
