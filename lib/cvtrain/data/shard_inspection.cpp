// Shard folder summaries and verification (see shard_inspection.h).
#include "cvtrain/data/shard_inspection.h"

#include <fmt/format.h>

#include <algorithm>

#include "cvtrain/core/error.h"
#include "cvtrain/data/shard_dataset.h"
#include "cvtrain/data/strided_threads.h"

namespace cvtrain {
namespace {

// Why each of samples [first, last) is unusable, by `workers` threads; "" for a good one.
std::vector<std::string> check_block(const ShardDataset& shards, size_t first, size_t last, size_t workers) {
  std::vector<std::string> failures(last - first);
  for_each_strided(first, last, workers, [&](size_t i) {
    try {
      shards.load(i);
    } catch (const Error& e) {
      failures[i - first] = e.what();
    }
  });
  return failures;
}

}  // namespace

ShardInspection inspect_shards(const std::string& folder, const VerifyOptions& options) {
  const ShardDataset shards(folder, 0);
  ShardInspection inspection;
  inspection.folder = folder;
  inspection.samples = shards.size();
  inspection.shards = shards.shard_files().size();
  inspection.encoded_bytes = shards.encoded_bytes();
  for (const auto& name : shards.class_names()) inspection.per_class.emplace_back(name, 0);
  for (size_t i = 0; i < shards.size(); ++i) ++inspection.per_class[static_cast<size_t>(shards.label(i))].second;
  if (!options.verify) return inspection;
  inspection.verified = true;
  const auto workers = static_cast<size_t>(std::max<int64_t>(1, options.workers));
  const size_t block = 256 * workers;
  for (size_t first = 0; first < shards.size(); first += block) {
    const size_t last = std::min(shards.size(), first + block);
    for (std::string& failure : check_block(shards, first, last, workers))
      if (!failure.empty()) inspection.unreadable.push_back(std::move(failure));
    if (options.progress) options.progress(last, shards.size());
  }
  return inspection;
}

std::string ShardInspection::summary() const {
  std::string out = fmt::format("{}: {} samples in {} shard(s), {} classes, {:.1f} MB of images ({:.1f} kB per image)\n", folder, samples,
                                shards, per_class.size(), static_cast<double>(encoded_bytes) / 1e6,
                                samples ? static_cast<double>(encoded_bytes) / 1e3 / static_cast<double>(samples) : 0.0);
  for (const auto& [name, count] : per_class)
    if (count > 0) out += fmt::format("  {:6}  {}\n", count, name);
  if (!verified) return out;
  for (const auto& reason : unreadable) out += fmt::format("unreadable: {}\n", reason);
  return out + fmt::format("verified: {} of {} samples decode\n", samples - unreadable.size(), samples);
}

}  // namespace cvtrain
