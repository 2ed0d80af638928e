// Copied samples, within a dataset and between two: copies that weigh one image more than the
// others, the same image under two classes (label noise), and validation images that are training
// images (a leak that inflates the validation figures). Byte-identical copies by a content hash;
// look-alikes (the same picture re-encoded or resized) by a perceptual hash of the decoded pixels.
// For `cvtrain data inspect --verify`.
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

// Per sample: its content fingerprint and (when decoded) its perceptual hash.
struct SamplePrints {
  Fingerprints bytes;
  Fingerprints looks;  // nullopt also for a picture without detail (perceptual_hash.h)
};

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

// Within one set: samples that are an earlier sample's picture while their bytes differ (byte
// copies are copies_within's): perceptual hashes within kLookAlikeBits, then the two pictures,
// decoded again on `workers` threads, correlating at least kSamePictureCorrelation.
CopyFinding look_alikes_within(const SamplePrints& prints, const Dataset& set, int64_t workers);

// Samples of `other` that are a picture of `set`, likewise, and hold no sample's bytes of `set`.
CopyFinding look_alikes_between(const SamplePrints& set_prints, const Dataset& set, const SamplePrints& other_prints, const Dataset& other,
                                int64_t workers);

// Every sample of `set` read and fingerprinted on `workers` threads, and with `looks` decoded and
// hashed too; `progress` as InspectOptions's (unset: nothing).
SamplePrints fingerprint_all(const Dataset& set, int64_t workers, bool looks, const std::function<void(size_t, size_t)>& progress);

}  // namespace cvtrain
