// Segmentation datasets: images paired with label masks, in the layouts people download them in
// (Pascal VOC, ADE20K, Cityscapes) or listed in a CSV of `image,mask` rows, or packed into shards.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cvtrain/data/dataset.h"
#include "cvtrain/data/label_mask.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

enum class SegmentationLayout {
  kVoc,         // ROOT/ImageSets/Segmentation/SPLIT.txt names ROOT/JPEGImages/ID.jpg and ROOT/SegmentationClass/ID.png
  kAde20k,      // ROOT/images/SPLIT/NAME.jpg and ROOT/annotations/SPLIT/NAME.png (ADEChallengeData2016)
  kCityscapes,  // ROOT/leftImg8bit/SPLIT/CITY/X_leftImg8bit.png and ROOT/gtFine/SPLIT/CITY/X_gtFine_labelTrainIds.png
  kList,        // a .csv or .tsv file with an image and a mask column
};
const char* layout_name(SegmentationLayout layout);  // "voc", "ade20k", "cityscapes", "list"

// The layout a path is in, told from its place in the tree (a split file under
// ImageSets/Segmentation, a split folder under images/ or leftImg8bit/) or a list's header;
// nullopt when it is none of them.
std::optional<SegmentationLayout> segmentation_layout_of(const std::string& path);

// What the path given to a layout is, for messages: "a split file, ROOT/ImageSets/Segmentation/train.txt".
std::string layout_path_help(SegmentationLayout layout);

// Image and mask paths, in the layout's order (VOC's split file, sorted file names otherwise).
// `root` is the folder a list's relative paths are taken from ("" for the list's own). Throws
// Error naming the path for a layout it does not hold, and the first image without a mask.
struct SegmentationPairs {
  std::vector<std::string> images;
  std::vector<std::string> masks;
};
SegmentationPairs list_segmentation_pairs(const std::string& path, SegmentationLayout layout, const std::string& root = "");

// The classes of a layout's benchmark (VOC's 21 with background, Cityscapes' 19 train ids), and
// the colours its masks and tools draw them in; empty where the layout names none (ADE20K's 150
// and lists: data.class_names and data.palette say them).
std::vector<std::string> layout_class_names(SegmentationLayout layout);
std::vector<Colour> layout_palette(SegmentationLayout layout);
// The colours predicted masks and previews are drawn in: the layout's where it has one for every
// class, else VOC's 256 (which lists use too).
std::vector<Colour> drawing_palette(SegmentationLayout layout, int64_t num_classes);

// Where a set's pairs are kept: their files, or shards packed from them (segmentation_dataset.cpp).
class PairStore;

// A Dataset whose samples are the pairs' images (read, describe, channels), with their masks
// beside them. It has no labels: label() is an Error, so no classification path can take it.
class SegmentationDataset : public Dataset {
 public:
  // `limit` > 0 keeps every k-th pair (data.max_samples).
  SegmentationDataset(const std::string& path, SegmentationLayout layout, MaskCoding coding, int64_t limit, const std::string& root = "");
  // The pairs `cvtrain data pack` wrote into DIR, read as the layout they were packed from reads
  // (its palette set into `coding`); classes.txt names the classes where it names num_classes.
  static SegmentationDataset packed(const std::string& dir, MaskCoding coding, int64_t limit);
  size_t size() const override;
  int64_t label(size_t index) const override;
  int64_t num_classes() const override { return coding_.num_classes; }
  int channels() const override { return 3; }
  RawSample read(size_t index) const override { return read_image(index); }
  std::string describe(size_t index) const override { return image_name(index); }
  // data.class_names, else the layout's names where they are as many as the classes, else numbers.
  std::vector<std::string> class_names() const override;
  void set_class_names(std::vector<std::string> names) { names_ = std::move(names); }
  SegmentationLayout layout() const { return layout_; }
  bool is_packed() const { return packed_; }
  const MaskCoding& coding() const { return coding_; }
  // The files' paths, or in shards "DIR/shard-00000.cvts #7" (and "... #7 mask"), for messages.
  std::string image_name(size_t index) const;
  std::string mask_name(size_t index) const;
  // The image's file as stored (decoded later, at the scale its crop needs). Thread-safe.
  RawSample read_image(size_t index) const;
  // The mask file's bytes as stored. Thread-safe.
  std::vector<uint8_t> read_mask_bytes(size_t index) const;
  // The mask decoded and checked (label_mask.h); Error naming its file. Thread-safe.
  LabelMask read_mask(size_t index) const;
  // Both at full size, the mask's size checked against the image's (an Error naming both files).
  std::pair<Image, LabelMask> load(size_t index) const;

 private:
  SegmentationDataset(std::shared_ptr<const PairStore> store, SegmentationLayout layout, MaskCoding coding, bool packed);

  std::shared_ptr<const PairStore> store_;
  SegmentationLayout layout_;
  MaskCoding coding_;
  bool packed_ = false;
  std::vector<std::string> names_;
};

// The layout of a pairs data.format (voc, ade20k, cityscapes, list).
SegmentationLayout layout_of(DataFormat format);
// The layout of the pairs at `path` in `format`: for shards, the one they were packed from.
SegmentationLayout layout_at(DataFormat format, const std::string& path);

// The pairs at `path` in data.format `format` (a layout, or shards of packed pairs), their masks
// read as `coding` says with the layout's palette. `limit` and `root` as the constructor's.
SegmentationDataset open_segmentation_pairs(DataFormat format, const std::string& path, MaskCoding coding, int64_t limit,
                                            const std::string& root = "");

}  // namespace cvtrain
