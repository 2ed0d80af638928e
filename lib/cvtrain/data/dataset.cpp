// open_dataset: the one place that maps data.format to a Dataset implementation.
#include <fmt/format.h>

#include <filesystem>

#include "cvtrain/core/error.h"
#include "cvtrain/data/idx_dataset.h"
#include "cvtrain/data/image_decode.h"
#include "cvtrain/data/image_views.h"
#include "cvtrain/data/image_folder.h"
#include "cvtrain/data/image_list.h"
#include "cvtrain/data/shard_dataset.h"
#include "cvtrain/recipe/data_format.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

Image Dataset::load(size_t index) const {
  RawSample raw = read(index);
  if (raw.has_pixels()) return std::move(raw.image);
  return decode_view(raw.encoded, describe(index), ImageView::exact);
}

std::vector<std::string> Dataset::class_names() const {
  std::vector<std::string> names;
  for (int64_t label = 0; label < num_classes(); ++label) names.push_back(std::to_string(label));
  return names;
}

DataFormat detect_format(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw Error(fmt::format("{}: does not exist", path));
  if (const auto format = format_of_path(path)) return *format;
  throw Error(no_dataset_message(path) + "; or name its format with --format");
}

std::unique_ptr<Dataset> open_dataset(const DataSpec& spec, const std::string& path, int64_t limit) {
  switch (spec.format) {
    case DataFormat::kIdx:
      return std::make_unique<IdxDataset>(path, limit);
    case DataFormat::kImageFolder:
      return std::make_unique<ImageFolderDataset>(path, limit);
    case DataFormat::kShards:
      return std::make_unique<ShardDataset>(path, limit);
    case DataFormat::kList:
      return std::make_unique<ImageListDataset>(path, limit, spec.root);
    case DataFormat::kAuto: {  // a recipe resolves auto as it loads; a spec made in code may not have
      DataSpec resolved = spec;
      resolved.format = detect_format(path);
      return open_dataset(resolved, path, limit);
    }
    case DataFormat::kSynthetic:
      break;
    case DataFormat::kVoc:
    case DataFormat::kAde20k:
    case DataFormat::kCityscapes:  // pairs: data/segmentation_dataset.h, with their mask coding
      throw Error(fmt::format("data.format '{}' holds segmentation pairs (task: segmentation), not labelled images", name_of(spec.format)));
  }
  throw Error(fmt::format("data.format '{}' has no files to read", name_of(spec.format)));
}

}  // namespace cvtrain
