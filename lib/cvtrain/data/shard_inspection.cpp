// Shard folder summaries and verification (see shard_inspection.h).
#include "cvtrain/data/shard_inspection.h"

#include <fmt/format.h>

#include "cvtrain/core/error.h"
#include "cvtrain/data/shard_dataset.h"

namespace cvtrain {

ShardInspection inspect_shards(const std::string& folder, bool verify) {
  const ShardDataset shards(folder, 0);
  ShardInspection inspection;
  inspection.folder = folder;
  inspection.samples = shards.size();
  inspection.shards = shards.shard_files().size();
  inspection.encoded_bytes = shards.encoded_bytes();
  for (const auto& name : shards.class_names()) inspection.per_class.emplace_back(name, 0);
  for (size_t i = 0; i < shards.size(); ++i) ++inspection.per_class[static_cast<size_t>(shards.label(i))].second;
  if (!verify) return inspection;
  inspection.verified = true;
  for (size_t i = 0; i < shards.size(); ++i) {
    try {
      shards.load(i);
    } catch (const Error& e) {
      inspection.unreadable.push_back(e.what());
    }
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
