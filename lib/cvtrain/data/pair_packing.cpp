// Packing segmentation pairs: the mask checked as training reads it, then stored as it was.
#include "cvtrain/data/pair_packing.h"

#include <fmt/format.h>

#include "cvtrain/core/error.h"

namespace cvtrain {

PackReport pack_segmentation_pairs(const SegmentationDataset& pairs, const std::string& dir, const PackOptions& options) {
  const PackedMask checked_mask = [&pairs](size_t i, ImageSize image) {
    std::vector<uint8_t> bytes = pairs.read_mask_bytes(i);
    const LabelMask ids = decode_mask(bytes, pairs.mask_name(i), pairs.coding());
    if (ids.width != image.width || ids.height != image.height)
      throw Error(fmt::format("{}: the mask is {}x{}, its image {} is {}x{}; a mask labels its image's pixels one for one",
                              pairs.mask_name(i), ids.width, ids.height, pairs.image_name(i), image.width, image.height));
    return bytes;
  };
  return pack_pair_shards(pairs, checked_mask, pairs.class_names(), layout_name(pairs.layout()), dir, options);
}

}  // namespace cvtrain
