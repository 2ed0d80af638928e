// Per-class accuracy and confusions (see class_accuracy.h).
#include "cvtrain/observe/class_accuracy.h"

#include <fmt/format.h>

#include <algorithm>

#include "cvtrain/core/text.h"

namespace cvtrain {
namespace {

double top1_of(const ClassAccuracy& a, size_t c) {
  return a.samples[c] > 0 ? static_cast<double>(a.hits[c]) / static_cast<double>(a.samples[c]) : 0.0;
}

// The classes with samples, lowest top-1 first (ties: more samples first, then label order).
std::vector<size_t> worst_first(const ClassAccuracy& a) {
  std::vector<size_t> order;
  for (size_t c = 0; c < a.samples.size(); ++c)
    if (a.samples[c] > 0) order.push_back(c);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    if (top1_of(a, x) != top1_of(a, y)) return top1_of(a, x) < top1_of(a, y);
    return a.samples[x] > a.samples[y];
  });
  return order;
}

std::vector<Confusion> largest_confusions(const ClassCounts& counts, size_t kept) {
  std::vector<Confusion> cells;
  const auto rows = static_cast<int64_t>(counts.samples.size());
  for (int64_t t = 0; counts.outputs > 0 && t < rows; ++t)
    for (int64_t p = 0; p < counts.outputs; ++p) {
      const double n = counts.confusion[static_cast<size_t>(t * counts.outputs + p)];
      if (t != p && n > 0) cells.push_back(Confusion{t, p, static_cast<int64_t>(n)});
    }
  std::stable_sort(cells.begin(), cells.end(), [](const Confusion& a, const Confusion& b) { return a.count > b.count; });
  if (cells.size() > kept) cells.resize(kept);
  return cells;
}

}  // namespace

ClassAccuracy class_accuracy(const ClassCounts& counts, const std::vector<std::string>& names, size_t confusions_kept) {
  ClassAccuracy a;
  a.names = names;
  for (size_t c = 0; c < counts.samples.size(); ++c) {
    a.samples.push_back(static_cast<int64_t>(counts.samples[c]));
    a.hits.push_back(static_cast<int64_t>(counts.hits[c]));
  }
  a.output_names = names;
  for (int64_t o = static_cast<int64_t>(names.size()); o < counts.outputs; ++o) a.output_names.push_back(fmt::format("output {}", o));
  a.confusions = largest_confusions(counts, confusions_kept);
  return a;
}

std::string ClassAccuracy::json_members() const {
  std::vector<std::string> classes, cells;
  for (size_t c = 0; c < samples.size(); ++c)
    classes.push_back(
        fmt::format("{{\"class\": {}, \"samples\": {}, \"top1\": {:.10g}}}", json_string(names[c]), samples[c], top1_of(*this, c)));
  for (const Confusion& x : confusions)
    cells.push_back(fmt::format("{{\"true\": {}, \"predicted\": {}, \"count\": {}}}", json_string(names[static_cast<size_t>(x.truth)]),
                                json_string(output_names[static_cast<size_t>(x.predicted)]), x.count));
  return fmt::format("\"per_class\": [{}], \"confusions\": [{}]", join(classes, ", "), join(cells, ", "));
}

std::string ClassAccuracy::lines(size_t worst, size_t confused) const {
  std::vector<std::string> low;
  const std::vector<size_t> order = worst_first(*this);
  for (size_t i = 0; i < std::min(worst, order.size()); ++i)
    low.push_back(fmt::format("{} {:.4f} ({} samples)", names[order[i]], top1_of(*this, order[i]), samples[order[i]]));
  std::string out = fmt::format("lowest top-1: {}\n", join(low, ", "));
  std::vector<std::string> taken;
  for (size_t i = 0; i < std::min(confused, confusions.size()); ++i) {
    const Confusion& x = confusions[i];
    const auto t = static_cast<size_t>(x.truth);
    taken.push_back(fmt::format("{} taken for {} {} times ({:.0f}% of {})", names[t], output_names[static_cast<size_t>(x.predicted)],
                                x.count, 100.0 * static_cast<double>(x.count) / static_cast<double>(std::max<int64_t>(1, samples[t])),
                                names[t]));
  }
  if (!taken.empty()) out += fmt::format("most confused: {}\n", join(taken, ", "));
  return out;
}

}  // namespace cvtrain
