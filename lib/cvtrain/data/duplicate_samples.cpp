// Duplicate samples by content fingerprint (see duplicate_samples.h).
#include "cvtrain/data/duplicate_samples.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "cvtrain/core/error.h"
#include "cvtrain/data/image_decode.h"
#include "cvtrain/data/image_views.h"
#include "cvtrain/data/perceptual_hash.h"
#include "cvtrain/data/strided_threads.h"

namespace cvtrain {
namespace {

constexpr size_t kDuplicateExamples = 5;

// A set with its class names read once (Dataset::class_names builds them on every call).
struct Named {
  const Dataset& set;
  std::vector<std::string> classes;
  explicit Named(const Dataset& d) : set(d), classes(d.class_names()) {}
  const std::string& class_of(size_t i) const { return classes[static_cast<size_t>(set.label(i))]; }
};

// Sample i of `a` has the content of sample j of `b` (`relation`: "=" for the same bytes).
void note(CopyFinding& finding, const Named& a, size_t i, const Named& b, size_t j, const char* relation = "=") {
  ++finding.copies;
  const bool other_class = a.class_of(i) != b.class_of(j);
  finding.other_class += other_class ? 1 : 0;
  std::vector<std::string>& examples = other_class ? finding.other_class_examples : finding.same_class_examples;
  if (examples.size() >= kDuplicateExamples) return;
  examples.push_back(other_class
                         ? fmt::format("{} ({}) {} {} ({})", a.set.describe(i), a.class_of(i), relation, b.set.describe(j), b.class_of(j))
                         : fmt::format("{} {} {}", a.set.describe(i), relation, b.set.describe(j)));
}

constexpr const char* kLooksLike = "looks like";

// Perceptual hashes indexed by four 16-bit bands: two hashes within 3 bits agree on at least one
// band (pigeonhole), so only the samples sharing a band are compared. A band value held by very
// many pictures (a common layout) stops taking more; the other bands still reach them.
class LookIndex {
 public:
  // The indexed samples within kLookAlikeBits of `look` whose bytes are not `bytes`, in order.
  std::vector<size_t> matches(uint64_t look, std::optional<uint64_t> bytes, const SamplePrints& indexed) const {
    std::vector<size_t> found;
    for (int band = 0; band < kBands; ++band) {
      const auto bucket = buckets_.find(key(look, band));
      if (bucket == buckets_.end()) continue;
      for (const size_t j : bucket->second)
        if (hash_distance(look, *indexed.looks[j]) <= kLookAlikeBits && indexed.bytes[j] != bytes) found.push_back(j);
    }
    std::sort(found.begin(), found.end());
    found.erase(std::unique(found.begin(), found.end()), found.end());
    return found;
  }
  void add(uint64_t look, size_t index) {
    for (int band = 0; band < kBands; ++band) {
      std::vector<size_t>& bucket = buckets_[key(look, band)];
      if (bucket.size() < kMostPerBucket) bucket.push_back(index);
    }
  }

 private:
  static constexpr int kBands = 4;
  static constexpr size_t kMostPerBucket = 512;
  static uint64_t key(uint64_t look, int band) { return uint64_t(band) << 16 | ((look >> (16 * band)) & 0xffff); }
  std::unordered_map<uint64_t, std::vector<size_t>> buckets_;
};

// A sample of `of` whose hash came close to those of `candidates` (samples of `to`).
struct Candidates {
  size_t sample;
  std::vector<size_t> candidates;
};

// A read sample's pixels: decoded, or as the format holds them.
Image pixels_of(RawSample raw, const std::string& name) {
  return raw.has_pixels() ? std::move(raw.image) : decode_view(raw.encoded, name, ImageView::exact);
}

Image picture(const Dataset& set, size_t index) { return pixels_of(set.read(index), set.describe(index)); }

// Each sample with the first candidate whose picture correlates with its own at least
// kSamePictureCorrelation (decoded again on `workers` threads: candidates are few), noted in order.
void confirm(const std::vector<Candidates>& found, const Named& of, const Named& to, int64_t workers, CopyFinding& finding) {
  std::vector<std::optional<size_t>> same(found.size());
  for_each_strided(0, found.size(), static_cast<size_t>(std::max<int64_t>(1, workers)), [&](size_t k) {
    try {
      const Image image = picture(of.set, found[k].sample);
      for (const size_t j : found[k].candidates)
        if (picture_correlation(image, picture(to.set, j)) >= kSamePictureCorrelation) {
          same[k] = j;
          break;
        }
    } catch (const Error&) {
      // No longer readable: not a copy of anything.
    }
  });
  for (size_t k = 0; k < found.size(); ++k)
    if (same[k]) note(finding, of, found[k].sample, to, *same[k], kLooksLike);
}

}  // namespace

uint64_t content_fingerprint(const RawSample& sample) {
  const std::vector<uint8_t>& bytes = sample.has_pixels() ? sample.image.pixels : sample.encoded;
  const uint64_t hash = std::hash<std::string_view>{}(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  return hash ^ (static_cast<uint64_t>(bytes.size()) * 0x9E3779B97F4A7C15ULL);
}

std::string example_lines(const CopyFinding& finding) {
  std::string out;
  for (const auto* examples : {&finding.other_class_examples, &finding.same_class_examples})
    for (const std::string& e : *examples) out += "  " + e + "\n";
  return out;
}

CopyFinding copies_within(const Fingerprints& prints, const Dataset& dataset) {
  const Named set(dataset);
  CopyFinding finding;
  std::unordered_map<uint64_t, size_t> first_with;
  first_with.reserve(prints.size());
  for (size_t i = 0; i < prints.size(); ++i) {
    if (!prints[i]) continue;
    const auto [it, fresh] = first_with.emplace(*prints[i], i);
    if (!fresh) note(finding, set, i, set, it->second);
  }
  return finding;
}

CopyFinding copies_between(const Fingerprints& set_prints, const Dataset& set_data, const Fingerprints& other_prints,
                           const Dataset& other_data) {
  const Named set(set_data), other(other_data);
  CopyFinding finding;
  std::unordered_map<uint64_t, size_t> in_set;
  in_set.reserve(set_prints.size());
  for (size_t i = 0; i < set_prints.size(); ++i)
    if (set_prints[i]) in_set.emplace(*set_prints[i], i);
  for (size_t j = 0; j < other_prints.size(); ++j) {
    if (!other_prints[j]) continue;
    const auto it = in_set.find(*other_prints[j]);
    if (it != in_set.end()) note(finding, other, j, set, it->second);
  }
  return finding;
}

CopyFinding look_alikes_within(const SamplePrints& prints, const Dataset& dataset, int64_t workers) {
  const Named set(dataset);
  LookIndex index;
  std::unordered_set<uint64_t> bytes_seen;
  std::vector<Candidates> found;
  for (size_t i = 0; i < prints.looks.size(); ++i) {
    const bool byte_copy = prints.bytes[i] && !bytes_seen.insert(*prints.bytes[i]).second;
    if (!prints.looks[i] || byte_copy) continue;
    std::vector<size_t> earlier = index.matches(*prints.looks[i], prints.bytes[i], prints);
    if (!earlier.empty()) found.push_back({i, std::move(earlier)});
    index.add(*prints.looks[i], i);
  }
  CopyFinding finding;
  confirm(found, set, set, workers, finding);
  return finding;
}

CopyFinding look_alikes_between(const SamplePrints& set_prints, const Dataset& set_data, const SamplePrints& other_prints,
                                const Dataset& other_data, int64_t workers) {
  const Named set(set_data), other(other_data);
  LookIndex index;
  std::unordered_set<uint64_t> set_bytes;
  for (size_t i = 0; i < set_prints.looks.size(); ++i) {
    if (set_prints.bytes[i]) set_bytes.insert(*set_prints.bytes[i]);
    if (set_prints.looks[i]) index.add(*set_prints.looks[i], i);
  }
  std::vector<Candidates> found;
  for (size_t j = 0; j < other_prints.looks.size(); ++j) {
    const bool byte_copy = other_prints.bytes[j] && set_bytes.count(*other_prints.bytes[j]) > 0;
    if (!other_prints.looks[j] || byte_copy) continue;
    std::vector<size_t> in_set = index.matches(*other_prints.looks[j], other_prints.bytes[j], set_prints);
    if (!in_set.empty()) found.push_back({j, std::move(in_set)});
  }
  CopyFinding finding;
  confirm(found, other, set, workers, finding);
  return finding;
}

SamplePrints fingerprint_all(const Dataset& set, int64_t workers, bool looks, const std::function<void(size_t, size_t)>& progress) {
  SamplePrints prints;
  prints.bytes.resize(set.size());
  prints.looks.resize(looks ? set.size() : 0);
  const auto threads = static_cast<size_t>(std::max<int64_t>(1, workers));
  const size_t block = 256 * threads;
  for (size_t first = 0; first < set.size(); first += block) {
    const size_t last = std::min(set.size(), first + block);
    for_each_strided(first, last, threads, [&](size_t i) {
      try {
        RawSample sample = set.read(i);
        prints.bytes[i] = content_fingerprint(sample);
        if (looks) prints.looks[i] = perceptual_hash(pixels_of(std::move(sample), set.describe(i)));
      } catch (const Error&) {
        // Unreadable here: no fingerprint, so no copy of anything.
      }
    });
    if (progress) progress(last, set.size());
  }
  return prints;
}

}  // namespace cvtrain
