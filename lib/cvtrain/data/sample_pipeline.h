// The per-sample path every loader runs: read, decode (JPEG at the smallest DCT scale that covers
// the planned crop), crop, resize, flip. Unusable samples are skipped, counted and bounded.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cvtrain/data/dataset.h"
#include "cvtrain/data/transforms.h"

namespace cvtrain {

// The samples of one dataset that could not be read or decoded. Thread-safe.
class BadSamples {
 public:
  // `what` names the data for messages ("data.train"); past `max_fraction` of `dataset_size`
  // samples the run stops.
  BadSamples(std::string what, size_t dataset_size, double max_fraction);
  // Records an unusable sample: warns the first time, throws Error once too many are bad.
  void record(size_t index, const std::string& reason);
  bool contains(size_t index) const;
  size_t count() const;
  // Why sample `index` was unusable; "" for a usable one.
  std::string reason(size_t index) const;

 private:
  std::string what_;
  size_t dataset_size_;
  double max_fraction_;
  mutable std::mutex mutex_;
  std::map<size_t, std::string> bad_;  // index: why
  std::string first_reasons_;
};

// Where the workers' time goes, summed over every sample and thread: reading the file (storage)
// against decoding and augmenting it, for the verdict that tells storage- from decode-bound; and
// how many of the JPEGs they decoded were progressive (decoded whole, so slower: `data pack` fixes it).
struct InputTimings {
  std::atomic<int64_t> read_ns{0}, decode_ns{0}, samples{0}, progressive{0};
};

// Writes sample `index`, transformed as `transform` says (keyed by `index`), to `out`
// (image_size^2 x channels bytes, HWC). Without `bad`, any read or decode error propagates; with
// it, an unusable sample is recorded and replaced by the next usable one in dataset order, still
// transformed with `index`'s random decisions, so batches keep their size and stay a pure
// function of (seed, epoch, index) and the data. Returns the index of the sample used (its label
// is the one that goes with the pixels).
// With `timings`, the sample's read and decode times are added to them. `draw` keys the random
// decisions instead of `index` (repeated augmentation: each copy of a sample draws its own).
constexpr uint64_t kDrawByIndex = ~uint64_t{0};
size_t prepare_sample(const Dataset& dataset, size_t index, const SampleTransform& transform, BadSamples* bad, uint8_t* out,
                      InputTimings* timings = nullptr, uint64_t draw = kDrawByIndex);

// A sample handed over encoded, for a batch decoder on the device (data.decoder nvjpeg): its file
// and the crop plan the CPU path would have rendered it with, so its region and flip do not change
// with the decoder.
struct EncodedSample {
  size_t index = 0;  // the dataset sample the bytes are (after any bad-sample substitution)
  uint64_t draw = 0; // what keyed its random decisions (prepare_sample's `draw`, resolved)
  std::vector<uint8_t> bytes;
  CropPlan plan;
  int64_t slot = 0;  // its place in the batch (set by the loader)
};
// Which JPEG files go to the device decoder; called by several workers at once.
using KeepEncoded = std::function<bool(const std::vector<uint8_t>& bytes)>;

// prepare_sample, except that a JPEG that `keep` accepts (in a 3-channel dataset) is read and
// planned but not decoded: it comes back in `kept`, and `out` is left as it was. Header errors and
// oversized images are bad samples here as on the CPU path; a file the device then fails to decode
// goes back through prepare_sample (see DeviceDecode).
size_t prepare_or_keep_sample(const Dataset& dataset, size_t index, const SampleTransform& transform, BadSamples* bad, uint8_t* out,
                              InputTimings* timings, uint64_t draw, const KeepEncoded& keep, std::optional<EncodedSample>& kept);

// prepare_sample into a new image (for tools and tests).
Image prepare_sample(const Dataset& dataset, size_t index, const SampleTransform& transform, BadSamples* bad = nullptr);

}  // namespace cvtrain
