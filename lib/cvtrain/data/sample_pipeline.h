// The per-sample path every loader runs: read, decode (JPEG at the smallest DCT scale that covers
// the planned crop), crop, resize, flip. Unusable samples are skipped, counted and bounded.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>

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

 private:
  std::string what_;
  size_t dataset_size_;
  double max_fraction_;
  mutable std::mutex mutex_;
  std::set<size_t> bad_;
  std::string first_reasons_;
};

// Where the workers' time goes, summed over every sample and thread: reading the file (storage)
// against decoding and augmenting it, for the verdict that tells storage- from decode-bound.
struct InputTimings {
  std::atomic<int64_t> read_ns{0}, decode_ns{0}, samples{0};
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

// prepare_sample into a new image (for tools and tests).
Image prepare_sample(const Dataset& dataset, size_t index, const SampleTransform& transform, BadSamples* bad = nullptr);

}  // namespace cvtrain
