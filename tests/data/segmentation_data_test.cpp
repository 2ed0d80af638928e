// Segmentation data: mask files read as ids (gray, palette, RGB, 16-bit), the four layouts' pairs,
// and the joint transforms keeping every mask pixel on its image pixel.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>

#include "cvtrain/core/error.h"
#include "cvtrain/core/png_file.h"
#include "cvtrain/core/rng.h"
#include "cvtrain/data/image_folder.h"
#include "cvtrain/data/joint_transforms.h"
#include "cvtrain/data/segmentation_dataset.h"
#include "cvtrain/data/segmentation_inspection.h"
#include "image_files.h"

using namespace cvtrain;
using cvtrain::testing::TempDir;

namespace {

std::string error_of(const std::function<void()>& run) {
  try {
    run();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::vector<uint8_t> palette_png(const TempDir& dir, const std::vector<uint8_t>& indices, int w, int h, const std::vector<Colour>& plte) {
  write_palette_png(dir.file("palette.png"), indices.data(), w, h, plte);
  return read_file_bytes(dir.file("palette.png"));
}

}  // namespace

TEST_CASE("voc_palette is VOC's colour map", "[segmentation]") {
  const std::vector<Colour> voc = voc_palette();
  REQUIRE(voc.size() == 256);
  CHECK(voc[0] == Colour{0, 0, 0});
  CHECK(voc[1] == Colour{128, 0, 0});
  CHECK(voc[2] == Colour{0, 128, 0});
  CHECK(voc[15] == Colour{192, 128, 128});   // person
  CHECK(voc[255] == Colour{224, 224, 192});  // the object borders
}

TEST_CASE("decode_mask reads gray ids, palette PNGs by colour and RGB through the palette", "[segmentation]") {
  TempDir dir;
  const std::vector<uint8_t> ids{0, 1, 2, 255, 2, 1};
  MaskCoding coding;
  coding.num_classes = 3;

  SECTION("8-bit gray: the values are the ids") {
    const LabelMask mask = decode_mask(testing::encode_png(ids, 3, 2, 0, 8), "m.png", coding);
    CHECK(mask.width == 3);
    CHECK(mask.height == 2);
    CHECK(mask.ids == ids);
  }
  SECTION("16-bit gray: whole values, one past 255 refused") {
    std::vector<uint8_t> wide;
    for (uint8_t id : ids) wide.insert(wide.end(), {0, id});
    CHECK(decode_mask(testing::encode_png(wide, 3, 2, 0, 16), "m.png", coding).ids == ids);
    wide[2] = 1;  // pixel 1 is 256 + 1
    CHECK_THAT(error_of([&] { decode_mask(testing::encode_png(wide, 3, 2, 0, 16), "wide.png", coding); }),
               Catch::Contains("wide.png: id 257 (at x 1, y 0)"));
  }
  SECTION("a VOC palette PNG: its indices, read by their colours") {
    coding.palette = voc_palette(3);
    CHECK(decode_mask(palette_png(dir, ids, 3, 2, voc_palette()), "voc.png", coding).ids == ids);
    // A file whose palette orders the colours otherwise: index 1 holds class 2's colour.
    std::vector<Colour> swapped = voc_palette();
    std::swap(swapped[1], swapped[2]);
    CHECK(decode_mask(palette_png(dir, ids, 3, 2, swapped), "swapped.png", coding).ids == std::vector<uint8_t>{0, 2, 1, 255, 1, 2});
    std::vector<Colour> odd = voc_palette();
    odd[2] = {10, 20, 30};
    CHECK_THAT(error_of([&] { decode_mask(palette_png(dir, ids, 3, 2, odd), "odd.png", coding); }),
               Catch::Contains("odd.png: colour (10, 20, 30) (palette index 2, at x 2, y 0) is not in data.palette"));
  }
  SECTION("a palette PNG without data.palette: the indices are the ids") {
    std::vector<Colour> any(256, Colour{1, 2, 3});
    CHECK(decode_mask(palette_png(dir, ids, 3, 2, any), "p.png", coding).ids == ids);
  }
  SECTION("RGB masks: each colour its class, others named with a pixel") {
    coding.palette = {{0, 0, 0}, {255, 0, 0}, {0, 0, 255}};
    std::vector<uint8_t> rgb;
    for (uint8_t id : {0, 1, 2, 2, 1, 0}) rgb.insert(rgb.end(), coding.palette[id].begin(), coding.palette[id].end());
    CHECK(decode_mask(testing::encode_png(rgb, 3, 2, 2, 8), "rgb.png", coding).ids == std::vector<uint8_t>{0, 1, 2, 2, 1, 0});
    rgb[3 * 4 + 1] = 7;  // pixel (1, 1) becomes (255, 7, 0)
    CHECK_THAT(error_of([&] { decode_mask(testing::encode_png(rgb, 3, 2, 2, 8), "rgb.png", coding); }),
               Catch::Contains("rgb.png: colour (255, 7, 0) (at x 1, y 1) is not in data.palette (3 colours, (0, 0, 0) for class 0)"));
    coding.palette.clear();
    CHECK_THAT(error_of([&] { decode_mask(testing::encode_png(rgb, 3, 2, 2, 8), "rgb.png", coding); }),
               Catch::Contains("rgb.png: an RGB mask, and no data.palette"));
  }
  SECTION("ids at or past num_classes are named with where they are; ignore_index is not") {
    coding.num_classes = 2;
    CHECK_THAT(error_of([&] { decode_mask(testing::encode_png(ids, 3, 2, 0, 8), "big.png", coding); }),
               Catch::Contains("big.png: label id 2 (at x 2, y 0, 2 pixels) is not a class: model.num_classes is 2"));
    coding.num_classes = 3;
    coding.ignore_index = 2;
    CHECK_THAT(error_of([&] { decode_mask(testing::encode_png(ids, 3, 2, 0, 8), "big.png", coding); }),
               Catch::Contains("label id 255 (at x 0, y 1, 1 pixels)"));
  }
  SECTION("reduce_zero_label: 0 is ignored, every other id one less") {
    coding.reduce_zero_label = true;
    coding.num_classes = 2;
    CHECK(decode_mask(testing::encode_png(ids, 3, 2, 0, 8), "ade.png", coding).ids == std::vector<uint8_t>{255, 0, 1, 255, 1, 0});
  }
  SECTION("a file that is no PNG") {
    CHECK_THAT(error_of([&] { decode_mask(testing::encode_jpeg(8, 8, 200), "a.jpg", coding); }),
               Catch::Contains("a.jpg: this is not a PNG; masks are PNG files"));
  }
}

namespace {

// A tiny image and its mask, `id` everywhere.
void write_pair(const TempDir& dir, const std::string& image, const std::string& mask, uint8_t id, int w = 8, int h = 6) {
  testing::write_bytes(dir, image,
                       image.size() > 4 && image.substr(image.size() - 4) == ".png"
                           ? testing::encode_png(std::vector<uint8_t>(static_cast<size_t>(w) * h * 3, 90), w, h, 2, 8)
                           : testing::encode_jpeg(w, h, 90));
  testing::write_bytes(dir, mask, testing::encode_png(std::vector<uint8_t>(static_cast<size_t>(8) * 6, id), 8, 6, 0, 8));
}

}  // namespace

TEST_CASE("the layouts are told from their paths and list their pairs", "[segmentation]") {
  TempDir dir;
  const auto file = [&](const std::string& name) { return dir.file(name); };

  SECTION("Pascal VOC: the split file's ids, in its order") {
    dir.write("VOC2012/ImageSets/Segmentation/train.txt", "b\n a \n\n");
    write_pair(dir, "VOC2012/JPEGImages/a.jpg", "VOC2012/SegmentationClass/a.png", 1);
    write_pair(dir, "VOC2012/JPEGImages/b.jpg", "VOC2012/SegmentationClass/b.png", 2);
    const std::string split = file("VOC2012/ImageSets/Segmentation/train.txt");
    REQUIRE(segmentation_layout_of(split) == SegmentationLayout::kVoc);
    SegmentationDataset dataset(split, SegmentationLayout::kVoc, MaskCoding{21, 255, false, layout_palette(SegmentationLayout::kVoc)}, 0);
    REQUIRE(dataset.size() == 2);
    CHECK(std::filesystem::path(dataset.image_name(0)).filename() == "b.jpg");
    CHECK(dataset.read_mask(0).ids[0] == 2);
    CHECK(dataset.read_mask(1).ids[0] == 1);
    std::filesystem::remove(file("VOC2012/SegmentationClass/a.png"));
    CHECK_THAT(error_of([&] { list_segmentation_pairs(split, SegmentationLayout::kVoc); }),
               Catch::Contains("1 of 2 pairs lack a file, the first mask") && Catch::Contains("SegmentationClass/a.png (its image is"));
    CHECK(layout_class_names(SegmentationLayout::kVoc).size() == 21);
  }
  SECTION("ADE20K: images/SPLIT beside annotations/SPLIT") {
    write_pair(dir, "ADE/images/training/ADE_train_1.jpg", "ADE/annotations/training/ADE_train_1.png", 3);
    write_pair(dir, "ADE/images/training/ADE_train_2.jpg", "ADE/annotations/training/ADE_train_2.png", 4);
    REQUIRE(segmentation_layout_of(file("ADE/images/training")) == SegmentationLayout::kAde20k);
    const SegmentationPairs pairs = list_segmentation_pairs(file("ADE/images/training"), SegmentationLayout::kAde20k);
    REQUIRE(pairs.masks.size() == 2);
    CHECK(pairs.masks[1] == file("ADE/annotations/training/ADE_train_2.png"));
    CHECK(segmentation_layout_of(file("ADE/images")) == std::nullopt);
  }
  SECTION("Cityscapes: a city's frames and their train-id masks; labelIds alone gets the script to run") {
    write_pair(dir, "cs/leftImg8bit/train/aachen/aachen_1_leftImg8bit.png", "cs/gtFine/train/aachen/aachen_1_gtFine_labelTrainIds.png", 0);
    REQUIRE(segmentation_layout_of(file("cs/leftImg8bit/train")) == SegmentationLayout::kCityscapes);
    CHECK(list_segmentation_pairs(file("cs/leftImg8bit/train"), SegmentationLayout::kCityscapes).masks.front() ==
          file("cs/gtFine/train/aachen/aachen_1_gtFine_labelTrainIds.png"));
    write_pair(dir, "cs/leftImg8bit/train/bonn/bonn_1_leftImg8bit.png", "cs/gtFine/train/bonn/bonn_1_gtFine_labelIds.png", 0);
    CHECK_THAT(error_of([&] { list_segmentation_pairs(file("cs/leftImg8bit/train"), SegmentationLayout::kCityscapes); }),
               Catch::Contains("bonn_1_gtFine_labelTrainIds.png") && Catch::Contains("createTrainIdLabelImgs"));
    CHECK(layout_palette(SegmentationLayout::kCityscapes).size() == 19);
  }
  SECTION("a list: image and mask columns, paths from the list's folder") {
    write_pair(dir, "set/img/x.jpg", "set/ann/x.png", 1);
    dir.write("set/train.csv", "image,mask\nimg/x.jpg,ann/x.png\n");
    REQUIRE(segmentation_layout_of(file("set/train.csv")) == SegmentationLayout::kList);
    SegmentationDataset dataset(file("set/train.csv"), SegmentationLayout::kList, MaskCoding{2}, 0);
    const auto [image, mask] = dataset.load(0);
    CHECK(image.width == 8);
    CHECK(mask.ids.front() == 1);
    dir.write("set/classes.csv", "path,label\nimg/x.jpg,cat\n");  // a classification list
    CHECK(segmentation_layout_of(file("set/classes.csv")) == std::nullopt);
  }
  SECTION("a mask of another size than its image is named with both") {
    write_pair(dir, "set/img/x.jpg", "set/ann/x.png", 1, 9, 6);
    dir.write("set/train.csv", "image,mask\nimg/x.jpg,ann/x.png\n");
    SegmentationDataset dataset(file("set/train.csv"), SegmentationLayout::kList, MaskCoding{2}, 0);
    CHECK_THAT(error_of([&] { dataset.load(0); }), Catch::Contains("ann/x.png: the mask is 8x6, its image") && Catch::Contains("is 9x6"));
  }
}

namespace {

// Class colours at corners of the RGB cube: no blend of others can equal one of them.
const std::vector<Colour> kClassColours{{0, 0, 0}, {255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {255, 255, 255}};

// An image of discs and bars whose mask is a function of its pixels: each class has its colour.
std::pair<Image, LabelMask> painted_pair(int w, int h, uint64_t seed) {
  SplitMix64 rng(seed);
  LabelMask mask{std::vector<uint8_t>(static_cast<size_t>(w) * h, 0), w, h};
  for (int shape = 0; shape < 6; ++shape) {
    const int cls = 1 + static_cast<int>(rng.below(4));
    const int cx = static_cast<int>(rng.below(w)), cy = static_cast<int>(rng.below(h)), r = 3 + static_cast<int>(rng.below(w / 4));
    const bool disc = rng.below(2) == 0;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        if (disc ? (x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r : std::abs(x - cx) <= r && std::abs(y - cy) <= r / 3)
          mask.ids[static_cast<size_t>(y) * w + x] = static_cast<uint8_t>(cls);
  }
  Image image{std::vector<uint8_t>(static_cast<size_t>(w) * h * 3), h, w, 3};
  for (size_t i = 0; i < mask.ids.size(); ++i) std::copy_n(kClassColours[mask.ids[i]].data(), 3, image.pixels.data() + 3 * i);
  return {image, mask};
}

int class_of_colour(const uint8_t* p) {
  for (size_t c = 0; c < kClassColours.size(); ++c)
    if (std::equal(p, p + 3, kClassColours[c].begin())) return static_cast<int>(c);
  return -1;
}

}  // namespace

TEST_CASE("joint transforms keep every mask pixel on its image pixel", "[segmentation]") {
  JointAugment augment;
  augment.scale_long = 160;
  augment.scale_short = 80;
  augment.ratio_min = 0.5;
  augment.ratio_max = 2.0;
  augment.crop_height = 64;
  augment.crop_width = 96;  // larger than some resized images: padding
  augment.hflip = 0.5;
  augment.cat_max_ratio = 0.75;
  augment.pad_colour = {124, 116, 104};
  size_t exact = 0, blended = 0, padded = 0, flips = 0, pads = 0;
  for (uint64_t sample = 0; sample < 60; ++sample) {
    const auto [image, mask] = painted_pair(120 + static_cast<int>(sample % 7) * 9, 70 + static_cast<int>(sample % 5) * 11, sample);
    const AugmentedPair out = augment_pair(augment, image, mask, sample_key(7, 1, sample));
    REQUIRE(out.image.width == 96);
    REQUIRE(out.image.height == 64);
    REQUIRE(out.mask.ids.size() == 96u * 64u);
    flips += out.plan.flip;
    pads += out.plan.crop.width < 96 || out.plan.crop.height < 64;
    for (int y = 0; y < 64; ++y)
      for (int x = 0; x < 96; ++x) {
        const size_t at = static_cast<size_t>(y) * 96 + x;
        const uint8_t* pixel = out.image.pixels.data() + 3 * at;
        const int id = out.mask.ids[at];
        if (x >= out.plan.crop.width || y >= out.plan.crop.height) {  // padding
          CHECK(id == 255);
          CHECK(std::equal(pixel, pixel + 3, augment.pad_colour.begin()));
          ++padded;
          continue;
        }
        const int cls = class_of_colour(pixel);
        if (cls >= 0) {  // a pixel of one class's colour (its whole neighbourhood is that class) carries that class
          INFO("sample " << sample << " at " << x << "," << y);
          REQUIRE(id == cls);
          ++exact;
        } else {  // a blend of classes at an edge: what the mask holds there is the oracle's to say
          ++blended;
        }
      }
    // Every mask pixel, against Pillow's nearest neighbour worked out here: the pixel under the
    // output pixel's centre, in the resized image's crop, mirrored when flipped.
    const JointPlan& plan = out.plan;
    for (int y = 0; y < plan.crop.height; ++y)
      for (int x = 0; x < plan.crop.width; ++x) {
        const int rx = plan.crop.x + (plan.flip ? plan.crop.width - 1 - x : x), ry = plan.crop.y + y;
        const int sx = static_cast<int>((rx + 0.5) * image.width / plan.resized.width);
        const int sy = static_cast<int>((ry + 0.5) * image.height / plan.resized.height);
        if (out.mask.ids[static_cast<size_t>(y) * 96 + x] != mask.ids[static_cast<size_t>(sy) * image.width + sx]) {
          INFO("sample " << sample << " at " << x << "," << y);
          REQUIRE(out.mask.ids[static_cast<size_t>(y) * 96 + x] == mask.ids[static_cast<size_t>(sy) * image.width + sx]);
        }
      }
  }
  CHECK(exact > 8 * blended);  // the check above is not vacuous
  CHECK(padded > 0);
  CHECK(flips > 15);
  CHECK(flips < 45);
  CHECK(pads > 0);
}

TEST_CASE("joint transforms are a pure function of the key, and photometric distortion changes the image only", "[segmentation]") {
  const auto [image, mask] = painted_pair(150, 100, 3);
  JointAugment augment;
  augment.scale_long = 200;
  augment.scale_short = 100;
  augment.ratio_min = 0.5;
  augment.ratio_max = 2.0;
  augment.crop_height = augment.crop_width = 64;
  augment.hflip = 0.5;
  std::set<std::pair<int, int>> places;
  for (uint64_t epoch = 0; epoch < 8; ++epoch) {
    const uint64_t key = sample_key(11, epoch, 5);
    const AugmentedPair a = augment_pair(augment, image, mask, key), b = augment_pair(augment, image, mask, key);
    CHECK(a.image.pixels == b.image.pixels);
    CHECK(a.mask.ids == b.mask.ids);
    places.insert({a.plan.crop.x, a.plan.resized.width});
    JointAugment distorted = augment;
    distorted.photometric = true;
    const AugmentedPair c = augment_pair(distorted, image, mask, key);
    CHECK(c.mask.ids == a.mask.ids);
    CHECK(c.plan.crop.x == a.plan.crop.x);
    CHECK(c.plan.crop.y == a.plan.crop.y);
  }
  CHECK(places.size() >= 6);  // epochs draw other sizes and places
}

TEST_CASE("cat_max_ratio redraws crops that one class fills", "[segmentation]") {
  // Mostly background, a 60-pixel square of class 1 in the middle.
  LabelMask mask{std::vector<uint8_t>(200u * 200u, 0), 200, 200};
  for (int y = 70; y < 130; ++y)
    for (int x = 70; x < 130; ++x) mask.ids[static_cast<size_t>(y) * 200 + x] = 1;
  const Image image{std::vector<uint8_t>(200u * 200u * 3, 50), 200, 200, 3};
  JointAugment augment;
  augment.crop_height = augment.crop_width = 64;
  const auto mixed_crops = [&](double cat_max_ratio) {
    augment.cat_max_ratio = cat_max_ratio;
    int mixed = 0;
    for (uint64_t i = 0; i < 100; ++i) {
      const AugmentedPair out = augment_pair(augment, image, mask, sample_key(1, 0, i));
      CHECK(out.plan.crop_draws <= 11);
      const auto square = std::count(out.mask.ids.begin(), out.mask.ids.end(), 1);
      const auto all = static_cast<decltype(square)>(out.mask.ids.size());
      mixed += square > 0 && square < all && std::max(square, all - square) < 0.75 * all;  // mmseg's test
    }
    return mixed;
  };
  const int without = mixed_crops(1.0), with = mixed_crops(0.75);
  CHECK(without < 45);  // 29% of the 64-pixel crops of 200 are mixed enough (counted over every offset)
  CHECK(with > 90);     // one of eleven draws is, 97.9% of the time
}

TEST_CASE("photometric distortion is mmseg's arithmetic", "[segmentation]") {
  std::vector<uint8_t> rgb{100, 200, 250, 0, 10, 20};
  PhotometricPlan plan;
  apply_photometric(plan, rgb.data(), 2, 1);
  CHECK(rgb == std::vector<uint8_t>{100, 200, 250, 0, 10, 20});  // nothing on: unchanged
  plan.brightness = true;
  plan.brightness_delta = 10.7f;  // float32 sum, clipped, truncated
  apply_photometric(plan, rgb.data(), 2, 1);
  CHECK(rgb == std::vector<uint8_t>{110, 210, 255, 10, 20, 30});
  plan = {};
  plan.contrast = true;
  plan.contrast_alpha = 0.5f;
  apply_photometric(plan, rgb.data(), 2, 1);
  CHECK(rgb == std::vector<uint8_t>{55, 105, 127, 5, 10, 15});
  plan = {};
  plan.hue = true;
  plan.hue_delta = 0;  // an HSV round trip alone keeps a saturated colour
  std::vector<uint8_t> red{255, 0, 0};
  apply_photometric(plan, red.data(), 1, 1);
  CHECK(red == std::vector<uint8_t>{255, 0, 0});
  plan.hue_delta = 60;  // a third of OpenCV's 180: red becomes green
  apply_photometric(plan, red.data(), 1, 1);
  CHECK(red == std::vector<uint8_t>{0, 255, 0});
}

TEST_CASE("rescaled_size is mmcv's imrescale", "[segmentation]") {
  CHECK(rescaled_size({2048, 1024}, 2048, 512, 1.0).width == 1024);  // Cityscapes at ratio 1: 1024x512
  CHECK(rescaled_size({2048, 1024}, 2048, 512, 1.0).height == 512);
  const ImageSize ade = rescaled_size({500, 375}, 2048, 512, 1.0);  // the short side decides: 512 / 375
  CHECK(ade.width == 683);
  CHECK(ade.height == 512);
  const ImageSize half = rescaled_size({2048, 1024}, 2048, 512, 0.5);
  CHECK(half.width == 512);
  CHECK(half.height == 256);
}

TEST_CASE("data inspect's census of pairs: pixels per class and what is wrong with which mask", "[segmentation]") {
  TempDir dir;
  dir.write("set/ImageSets/Segmentation/train.txt", "a\nb\nc\nd\n");
  write_pair(dir, "set/JPEGImages/a.jpg", "set/SegmentationClass/a.png", 1);
  write_pair(dir, "set/JPEGImages/b.jpg", "set/SegmentationClass/b.png", 0);
  write_pair(dir, "set/JPEGImages/c.jpg", "set/SegmentationClass/c.png", 7);         // no class of 3
  write_pair(dir, "set/JPEGImages/d.jpg", "set/SegmentationClass/d.png", 2, 10, 6);  // the image is wider
  const std::string split = dir.file("set/ImageSets/Segmentation/train.txt");
  SegmentationDataset dataset(split, SegmentationLayout::kVoc, MaskCoding{3}, 0);
  const SegmentationInspection found = inspect_segmentation(dataset, split, {true, 1000, 2, {}});
  CHECK(found.looked_at == 4);
  CHECK(found.pixels[1] == 48);
  CHECK(found.pixels[0] == 48);
  CHECK(found.pixels[7] == 48);
  CHECK(found.masks_with[2] == 1);
  REQUIRE(found.unknown_ids.size() == 1);
  CHECK_THAT(found.unknown_ids[0], Catch::Contains("c.png: id 7 (48 pixels)"));
  REQUIRE(found.size_mismatches.size() == 1);
  CHECK_THAT(found.size_mismatches[0], Catch::Contains("d.png: 8x6, its image") && Catch::Contains("d.jpg 10x6"));
  CHECK_FALSE(found.usable());
  const std::string summary = found.summary();
  CHECK_THAT(summary,
             Catch::Contains("4 image and mask pairs; 4 read (every pair)") && Catch::Contains("1 mask(s) with ids that are no class"));
  CHECK_THAT(found.json(),
             Catch::Contains("\"num_classes\": 3") && Catch::Contains("{\"id\": 1, \"name\": \"1\", \"pixels\": 48, \"masks\": 1}"));
}
