// `cvtrain data pack` of segmentation pairs: each pair's image and mask stored byte for byte in
// shards (shard_dataset.h), after the checks training would make of them.
#pragma once

#include <string>

#include "cvtrain/data/segmentation_dataset.h"
#include "cvtrain/data/shard_dataset.h"

namespace cvtrain {

// Packs `pairs` into DIR, in their order, with pairs.txt naming their layout and classes.txt their
// class names. A pair whose image or mask cannot be read, whose mask holds an id that is no class
// (pairs.coding()) or differs in size from its image is skipped with a warning naming the file,
// as pack_shards skips an unreadable image; the folder's earlier pack stays whole until the end.
PackReport pack_segmentation_pairs(const SegmentationDataset& pairs, const std::string& dir, const PackOptions& options);

}  // namespace cvtrain
