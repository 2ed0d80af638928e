// open_dataset: the one place that maps data.format to a Dataset implementation.
#include <fmt/format.h>

#include "cvtrain/core/error.h"
#include "cvtrain/data/idx_dataset.h"
#include "cvtrain/data/image_folder.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

std::unique_ptr<Dataset> open_dataset(const DataSpec& spec, const std::string& path, int64_t limit) {
  if (spec.format == "idx") return std::make_unique<IdxDataset>(path, limit);
  if (spec.format == "imagefolder") return std::make_unique<ImageFolderDataset>(path, limit);
  throw Error(fmt::format("data.format '{}' has no reader", spec.format));
}

}  // namespace cvtrain
