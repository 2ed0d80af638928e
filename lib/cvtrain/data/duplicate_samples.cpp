// Duplicate samples by content fingerprint (see duplicate_samples.h).
#include "cvtrain/data/duplicate_samples.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <string_view>
#include <unordered_map>

#include "cvtrain/core/error.h"
#include "cvtrain/data/strided_threads.h"

namespace cvtrain {
namespace {

constexpr size_t kExamples = 5;

// A set with its class names read once (Dataset::class_names builds them on every call).
struct Named {
  const Dataset& set;
  std::vector<std::string> classes;
  explicit Named(const Dataset& d) : set(d), classes(d.class_names()) {}
  const std::string& class_of(size_t i) const { return classes[static_cast<size_t>(set.label(i))]; }
};

// Sample i of `a` has the content of sample j of `b`.
void note(CopyFinding& finding, const Named& a, size_t i, const Named& b, size_t j) {
  ++finding.copies;
  const bool other_class = a.class_of(i) != b.class_of(j);
  finding.other_class += other_class ? 1 : 0;
  std::vector<std::string>& examples = other_class ? finding.other_class_examples : finding.same_class_examples;
  if (examples.size() >= kExamples) return;
  examples.push_back(other_class ? fmt::format("{} ({}) = {} ({})", a.set.describe(i), a.class_of(i), b.set.describe(j), b.class_of(j))
                                 : fmt::format("{} = {}", a.set.describe(i), b.set.describe(j)));
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

Fingerprints fingerprint_all(const Dataset& set, int64_t workers, const std::function<void(size_t, size_t)>& progress) {
  Fingerprints prints(set.size());
  const auto threads = static_cast<size_t>(std::max<int64_t>(1, workers));
  const size_t block = 256 * threads;
  for (size_t first = 0; first < set.size(); first += block) {
    const size_t last = std::min(set.size(), first + block);
    for_each_strided(first, last, threads, [&](size_t i) {
      try {
        prints[i] = content_fingerprint(set.read(i));
      } catch (const Error&) {
      }
    });
    if (progress) progress(last, set.size());
  }
  return prints;
}

}  // namespace cvtrain
