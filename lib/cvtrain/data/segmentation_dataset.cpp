// Finding the image and mask pairs of each layout, and reading them.
#include "cvtrain/data/segmentation_dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>

#include "cvtrain/core/error.h"
#include "cvtrain/core/text_file.h"
#include "cvtrain/data/image_decode.h"
#include "cvtrain/data/image_views.h"
#include "cvtrain/data/image_folder.h"
#include "cvtrain/data/image_list.h"
#include "cvtrain/data/shard_dataset.h"
#include "cvtrain/recipe/data_format.h"

namespace cvtrain {
namespace {

namespace fs = std::filesystem;

const ListColumn kImageColumn{"image", {"image", "image_path", "img", "img_path", "path", "file", "filename", "file_name"}};
const ListColumn kMaskColumn{
    "mask",
    {"mask", "mask_path", "label", "label_path", "annotation", "annotation_path", "seg", "segmentation", "seg_map", "gt", "ground_truth"}};

bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// VOC: ROOT is three folders above the split file.
fs::path voc_root(const fs::path& split) { return split.parent_path().parent_path().parent_path(); }

bool is_voc_split(const fs::path& p) {
  return lower(p.extension().string()) == ".txt" && p.parent_path().filename() == "Segmentation" &&
         p.parent_path().parent_path().filename() == "ImageSets";
}

// ADE20K and Cityscapes: the split folder's parent names the images, its grandparent holds the masks.
bool is_split_under(const fs::path& p, const char* images, const char* masks) {
  const fs::path folder = p.has_filename() ? p : p.parent_path();
  return folder.parent_path().filename() == images && path_exists(folder.parent_path().parent_path() / masks / folder.filename());
}

fs::path split_folder(const std::string& path) {
  const fs::path p = fs::absolute(path).lexically_normal();
  return p.has_filename() ? p : p.parent_path();
}

// A classification list (path,label) has the same column names: a mask column holds PNG files.
bool list_names_a_mask(const std::string& path) {
  try {
    const std::vector<ListEntry> rows = read_list_table(path, kImageColumn, kMaskColumn);
    return !rows.empty() && lower(fs::path(rows.front().label).extension().string()) == ".png";
  } catch (const Error&) {
    return false;
  }
}

SegmentationPairs voc_pairs(const std::string& path) {
  const fs::path split = fs::absolute(path).lexically_normal();
  if (!is_voc_split(split))
    throw Error(fmt::format("{}: not a VOC split file; data.format voc takes {}", path, layout_path_help(SegmentationLayout::kVoc)));
  const std::optional<std::string> text = read_text_file(split.string());
  if (!text) throw Error(fmt::format("{}: cannot be read", path));
  const fs::path root = voc_root(split);
  SegmentationPairs pairs;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    const std::string id = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    pairs.images.push_back((root / "JPEGImages" / (id + ".jpg")).string());
    pairs.masks.push_back((root / "SegmentationClass" / (id + ".png")).string());
  }
  return pairs;
}

// Every image under the split folder, its mask at the same relative place under `masks` with
// its name changed by `mask_name`.
template <typename MaskName>
SegmentationPairs mirrored_pairs(const std::string& path, SegmentationLayout layout, const char* images, const char* masks,
                                 MaskName mask_name) {
  const fs::path folder = split_folder(path);
  if (!is_split_under(folder, images, masks))
    throw Error(fmt::format("{}: not a split folder of {}; data.format {} takes {}", path, layout_name(layout), layout_name(layout),
                            layout_path_help(layout)));
  const fs::path mask_folder = folder.parent_path().parent_path() / masks / folder.filename();
  SegmentationPairs pairs;
  for (const std::string& image : image_files_under(folder.string())) {
    const fs::path relative = fs::path(image).lexically_relative(folder);
    const fs::path mask = mask_folder / relative.parent_path() / mask_name(relative.filename().string());
    if (mask.empty()) continue;
    pairs.images.push_back(image);
    pairs.masks.push_back(mask.string());
  }
  return pairs;
}

std::string ade20k_mask(const std::string& image) { return fs::path(image).replace_extension(".png").string(); }

// X_leftImg8bit.png -> X_gtFine_labelTrainIds.png; files not named so are no Cityscapes frames.
std::string cityscapes_mask(const std::string& image) {
  const std::string suffix = "_leftImg8bit.png";
  if (image.size() <= suffix.size() || image.compare(image.size() - suffix.size(), suffix.size(), suffix) != 0) return "";
  return image.substr(0, image.size() - suffix.size()) + "_gtFine_labelTrainIds.png";
}

SegmentationPairs list_pairs(const std::string& path, const std::string& root) {
  const fs::path base = root.empty() ? fs::absolute(path).parent_path() : fs::absolute(root);
  const auto resolved = [&base](const std::string& file) {
    return fs::path(file).is_absolute() ? file : (base / file).lexically_normal().string();
  };
  SegmentationPairs pairs;
  for (const ListEntry& row : read_list_table(path, kImageColumn, kMaskColumn)) {
    pairs.images.push_back(resolved(row.path));
    pairs.masks.push_back(resolved(row.label));
  }
  return pairs;
}

// Every pair's files must be there: a missing mask fails at the start, naming its image, not as a
// bad sample hours in.
void check_pairs_exist(const SegmentationPairs& pairs, const std::string& path, SegmentationLayout layout) {
  if (pairs.images.empty()) throw Error(fmt::format("{}: no images ({} layout: {})", path, layout_name(layout), layout_path_help(layout)));
  size_t missing = 0, first = 0;
  bool image_missing = false;
  for (size_t i = 0; i < pairs.images.size(); ++i) {
    const bool no_image = !path_exists(pairs.images[i]), no_mask = !path_exists(pairs.masks[i]);
    if (!no_image && !no_mask) continue;
    if (missing++ == 0) first = i, image_missing = no_image;
  }
  if (missing == 0) return;
  std::string hint;
  if (layout == SegmentationLayout::kCityscapes && !image_missing) {
    std::string ids = pairs.masks[first];
    ids.replace(ids.rfind("labelTrainIds"), 13, "labelIds");
    if (path_exists(ids)) hint = "; the folder has labelIds but no labelTrainIds: make them with cityscapesScripts' createTrainIdLabelImgs";
  }
  throw Error(fmt::format("{}: {} of {} pairs lack a file, the first {} {} (its {} is {}){}", path, missing, pairs.images.size(),
                          image_missing ? "image" : "mask", image_missing ? pairs.images[first] : pairs.masks[first],
                          image_missing ? "mask" : "image", image_missing ? pairs.masks[first] : pairs.images[first], hint));
}

void keep_spread_pairs(SegmentationPairs& pairs, int64_t limit) {
  std::vector<int64_t> order(pairs.images.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  keep_spread(pairs.images, order, limit);
  std::vector<std::string> masks;
  for (int64_t i : order) masks.push_back(pairs.masks[static_cast<size_t>(i)]);
  pairs.masks = std::move(masks);
}

}  // namespace

const char* layout_name(SegmentationLayout layout) {
  switch (layout) {
    case SegmentationLayout::kVoc:
      return "voc";
    case SegmentationLayout::kAde20k:
      return "ade20k";
    case SegmentationLayout::kCityscapes:
      return "cityscapes";
    case SegmentationLayout::kList:
      return "list";
  }
  return "?";
}

std::string layout_path_help(SegmentationLayout layout) {
  switch (layout) {
    case SegmentationLayout::kVoc:
      return "a split file, VOC2012/ImageSets/Segmentation/train.txt";
    case SegmentationLayout::kAde20k:
      return "a split folder, ADEChallengeData2016/images/training (its masks in annotations/training)";
    case SegmentationLayout::kCityscapes:
      return "a split folder, cityscapes/leftImg8bit/train (its masks in gtFine/train)";
    case SegmentationLayout::kList:
      return "a .csv or .tsv file whose header names an image and a mask column";
  }
  return "";
}

std::optional<SegmentationLayout> segmentation_layout_of(const std::string& path) {
  const std::optional<DataFormat> format = pairs_format_of_path(path);
  if (!format) return std::nullopt;
  if (*format == DataFormat::kList && !(path_exists(path) && list_names_a_mask(path))) return std::nullopt;  // a classification list
  return layout_at(*format, path);
}

SegmentationPairs list_segmentation_pairs(const std::string& path, SegmentationLayout layout, const std::string& root) {
  SegmentationPairs pairs;
  switch (layout) {
    case SegmentationLayout::kVoc:
      pairs = voc_pairs(path);
      break;
    case SegmentationLayout::kAde20k:
      pairs = mirrored_pairs(path, layout, "images", "annotations", ade20k_mask);
      break;
    case SegmentationLayout::kCityscapes:
      pairs = mirrored_pairs(path, layout, "leftImg8bit", "gtFine", cityscapes_mask);
      break;
    case SegmentationLayout::kList:
      pairs = list_pairs(path, root);
      break;
  }
  check_pairs_exist(pairs, path, layout);
  return pairs;
}

std::vector<std::string> layout_class_names(SegmentationLayout layout) {
  switch (layout) {
    case SegmentationLayout::kVoc:
      return {"background",  "aeroplane", "bicycle", "bird",      "boat",   "bottle",      "bus",   "car",  "cat",   "chair",    "cow",
              "diningtable", "dog",       "horse",   "motorbike", "person", "pottedplant", "sheep", "sofa", "train", "tvmonitor"};
    case SegmentationLayout::kCityscapes:
      return {"road", "sidewalk", "building", "wall", "fence", "pole", "traffic light", "traffic sign", "vegetation", "terrain",
              "sky",  "person",   "rider",    "car",  "truck", "bus",  "train",         "motorcycle",   "bicycle"};
    default:
      return {};
  }
}

std::vector<Colour> layout_palette(SegmentationLayout layout) {
  if (layout == SegmentationLayout::kCityscapes)  // cityscapesScripts' labels.py, by train id
    return {{128, 64, 128}, {244, 35, 232}, {70, 70, 70},    {102, 102, 156}, {190, 153, 153}, {153, 153, 153}, {250, 170, 30},
            {220, 220, 0},  {107, 142, 35}, {152, 251, 152}, {70, 130, 180},  {220, 20, 60},   {255, 0, 0},     {0, 0, 142},
            {0, 0, 70},     {0, 60, 100},   {0, 80, 100},    {0, 0, 230},     {119, 11, 32}};
  if (layout == SegmentationLayout::kVoc) return voc_palette(21);
  return {};
}

std::vector<Colour> drawing_palette(SegmentationLayout layout, int64_t num_classes) {
  std::vector<Colour> palette = layout_palette(layout);
  return static_cast<int64_t>(palette.size()) >= num_classes ? palette : voc_palette();
}

class PairStore {
 public:
  virtual ~PairStore() = default;
  virtual size_t size() const = 0;
  virtual std::vector<uint8_t> image(size_t index) const = 0;
  virtual std::vector<uint8_t> mask(size_t index) const = 0;
  virtual std::string image_name(size_t index) const = 0;
  virtual std::string mask_name(size_t index) const = 0;
};

namespace {

class PairFiles : public PairStore {
 public:
  explicit PairFiles(SegmentationPairs pairs) : pairs_(std::move(pairs)) {}
  size_t size() const override { return pairs_.images.size(); }
  std::vector<uint8_t> image(size_t index) const override { return read_file_bytes(pairs_.images[index]); }
  std::vector<uint8_t> mask(size_t index) const override { return read_file_bytes(pairs_.masks[index]); }
  std::string image_name(size_t index) const override { return pairs_.images[index]; }
  std::string mask_name(size_t index) const override { return pairs_.masks[index]; }

 private:
  SegmentationPairs pairs_;
};

class PairShards : public PairStore {
 public:
  PairShards(const std::string& dir, int64_t limit) : shards_(dir, limit, ShardContents::kPairs) {}
  size_t size() const override { return shards_.size(); }
  std::vector<uint8_t> image(size_t index) const override { return shards_.read(index).encoded; }
  std::vector<uint8_t> mask(size_t index) const override { return shards_.read_mask(index); }
  std::string image_name(size_t index) const override { return shards_.describe(index); }
  std::string mask_name(size_t index) const override { return shards_.describe_mask(index); }
  std::vector<std::string> class_names() const { return shards_.class_names(); }

 private:
  ShardDataset shards_;
};

SegmentationPairs spread_pairs(const std::string& path, SegmentationLayout layout, int64_t limit, const std::string& root) {
  SegmentationPairs pairs = list_segmentation_pairs(path, layout, root);
  keep_spread_pairs(pairs, limit);
  return pairs;
}

// The layout a packed folder's pairs.txt names.
SegmentationLayout packed_layout(const std::string& dir) {
  const std::optional<std::string> name = packed_pairs_layout(dir);
  if (!name)
    throw Error(
        fmt::format("{}: {}, not segmentation pairs (no pairs.txt); `cvtrain data pack SRC DST` packs pairs from a VOC split "
                    "file, an ADE20K or Cityscapes split folder or an image,mask list",
                    dir, path_exists(fs::path(dir) / "classes.txt") ? "shards of images with class labels" : "no shards folder"));
  for (SegmentationLayout layout :
       {SegmentationLayout::kVoc, SegmentationLayout::kAde20k, SegmentationLayout::kCityscapes, SegmentationLayout::kList})
    if (*name == layout_name(layout)) return layout;
  throw Error(fmt::format("{}/pairs.txt: names layout '{}'; packed pairs come from voc, ade20k, cityscapes or list", dir, *name));
}

}  // namespace

SegmentationDataset::SegmentationDataset(const std::string& path, SegmentationLayout layout, MaskCoding coding, int64_t limit,
                                         const std::string& root)
    : SegmentationDataset(std::make_shared<PairFiles>(spread_pairs(path, layout, limit, root)), layout, std::move(coding), false) {}

SegmentationDataset::SegmentationDataset(std::shared_ptr<const PairStore> store, SegmentationLayout layout, MaskCoding coding, bool packed)
    : store_(std::move(store)), layout_(layout), coding_(std::move(coding)), packed_(packed) {}

SegmentationDataset SegmentationDataset::packed(const std::string& dir, MaskCoding coding, int64_t limit) {
  const SegmentationLayout layout = packed_layout(dir);
  auto shards = std::make_shared<PairShards>(dir, limit);
  std::vector<std::string> names = shards->class_names();
  coding.palette = layout_palette(layout);
  SegmentationDataset pairs(std::move(shards), layout, std::move(coding), true);
  if (!names.empty() && static_cast<int64_t>(names.size()) == pairs.num_classes()) pairs.set_class_names(std::move(names));
  return pairs;
}

size_t SegmentationDataset::size() const { return store_->size(); }

std::string SegmentationDataset::image_name(size_t index) const { return store_->image_name(index); }

std::string SegmentationDataset::mask_name(size_t index) const { return store_->mask_name(index); }

int64_t SegmentationDataset::label(size_t index) const {
  throw Error(fmt::format("{}: a segmentation pair has a mask, not a class label", image_name(index)));
}

std::vector<std::string> SegmentationDataset::class_names() const {
  if (!names_.empty()) return names_;
  std::vector<std::string> names = layout_class_names(layout_);
  if (static_cast<int64_t>(names.size()) == coding_.num_classes) return names;
  return Dataset::class_names();
}

SegmentationLayout layout_of(DataFormat format) {
  switch (format) {
    case DataFormat::kVoc:
      return SegmentationLayout::kVoc;
    case DataFormat::kAde20k:
      return SegmentationLayout::kAde20k;
    case DataFormat::kCityscapes:
      return SegmentationLayout::kCityscapes;
    case DataFormat::kList:
      return SegmentationLayout::kList;
    default:
      break;
  }
  throw Error(fmt::format("data.format {} holds no segmentation pairs", name_of(format)));
}

SegmentationLayout layout_at(DataFormat format, const std::string& path) {
  return format == DataFormat::kShards ? packed_layout(path) : layout_of(format);
}

SegmentationDataset open_segmentation_pairs(DataFormat format, const std::string& path, MaskCoding coding, int64_t limit,
                                            const std::string& root) {
  if (format == DataFormat::kShards) return SegmentationDataset::packed(path, std::move(coding), limit);
  const SegmentationLayout layout = layout_of(format);
  coding.palette = layout_palette(layout);
  return SegmentationDataset(path, layout, std::move(coding), limit, root);
}

RawSample SegmentationDataset::read_image(size_t index) const {
  RawSample sample;
  sample.encoded = store_->image(index);
  return sample;
}

std::vector<uint8_t> SegmentationDataset::read_mask_bytes(size_t index) const { return store_->mask(index); }

LabelMask SegmentationDataset::read_mask(size_t index) const { return decode_mask(read_mask_bytes(index), mask_name(index), coding_); }

std::pair<Image, LabelMask> SegmentationDataset::load(size_t index) const {
  Image image = decode_view(read_image(index).encoded, image_name(index), ImageView::exact);
  LabelMask mask = read_mask(index);
  if (mask.width != image.width || mask.height != image.height)
    throw Error(fmt::format("{}: the mask is {}x{}, its image {} is {}x{}; a mask labels its image's pixels one for one", mask_name(index),
                            mask.width, mask.height, image_name(index), image.width, image.height));
  return {std::move(image), std::move(mask)};
}

}  // namespace cvtrain
