// Packed segmentation pairs: images and masks back byte for byte in their order, unusable pairs
// skipped and named, a damaged mask named as the pair's, pairs and labelled shards kept apart.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "cvtrain/core/error.h"
#include "cvtrain/core/png_file.h"
#include "cvtrain/data/image_folder.h"
#include "cvtrain/data/pair_packing.h"
#include "cvtrain/data/segmentation_dataset.h"
#include "cvtrain/data/shard_dataset.h"
#include "cvtrain/recipe/data_format.h"
#include "image_files.h"

using namespace cvtrain;
using cvtrain::testing::TempDir;
using cvtrain::testing::write_bytes;

namespace {

std::vector<uint8_t> gray_mask(int w, int h, uint8_t first_id) {
  std::vector<uint8_t> ids(static_cast<size_t>(w) * h);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint8_t>((first_id + i / 7) % 3);
  return testing::encode_png(ids, w, h, 0, 8);
}

// A list of `count` pairs: even ones a JPEG image with a gray mask, odd ones a PNG image with a
// palette mask (read by index: a list's layout has no palette), sizes differing pair by pair.
std::string make_pairs(const TempDir& dir, int count) {
  std::string csv = "image,mask\n";
  for (int i = 0; i < count; ++i) {
    const int w = 10 + i, h = 8 + 2 * i;
    const std::string image = "img/" + std::to_string(i) + (i % 2 ? ".png" : ".jpg"), mask = "ann/" + std::to_string(i) + ".png";
    write_bytes(dir, "set/" + image,
                i % 2 ? testing::encode_png(std::vector<uint8_t>(static_cast<size_t>(w) * h * 3, static_cast<uint8_t>(20 * i)), w, h, 2, 8)
                      : testing::encode_jpeg(w, h, static_cast<uint8_t>(20 * i)));
    if (i % 2) {
      std::vector<uint8_t> indices(static_cast<size_t>(w) * h, static_cast<uint8_t>(i % 3));
      indices[0] = 255;
      std::filesystem::create_directories(dir.file("set/ann"));
      write_palette_png(dir.file("set/" + mask), indices.data(), w, h, voc_palette());
    } else {
      write_bytes(dir, "set/" + mask, gray_mask(w, h, static_cast<uint8_t>(i)));
    }
    csv += image + "," + mask + "\n";
  }
  return dir.write("set/train.csv", csv);
}

MaskCoding three_classes() {
  MaskCoding coding;
  coding.num_classes = 3;
  return coding;
}

}  // namespace

TEST_CASE("packed pairs read back every image and mask byte for byte, in order, as the files read", "[data][segmentation]") {
  TempDir dir;
  const std::string list = make_pairs(dir, 5);
  const SegmentationDataset files(list, SegmentationLayout::kList, three_classes(), 0);
  PackOptions options;
  options.shards = 2;
  const PackReport report = pack_segmentation_pairs(files, dir.file("packed"), options);
  CHECK(report.written == 5);
  CHECK(report.skipped == 0);
  CHECK(report.reencoded == 0);  // PNG images too: a pair's pixels never change in a pack

  REQUIRE(pairs_format_of_path(dir.file("packed")) == DataFormat::kShards);
  CHECK(segmentation_layout_of(dir.file("packed")) == SegmentationLayout::kList);
  CHECK(packed_pairs_layout(dir.file("packed")) == std::string("list"));
  const SegmentationDataset packed = open_segmentation_pairs(DataFormat::kShards, dir.file("packed"), three_classes(), 0);
  CHECK(packed.is_packed());
  CHECK(packed.layout() == SegmentationLayout::kList);
  REQUIRE(packed.size() == 5);
  for (size_t i = 0; i < 5; ++i) {
    INFO("pair " << i);
    CHECK(packed.read_image(i).encoded == files.read_image(i).encoded);
    CHECK(packed.read_mask_bytes(i) == files.read_mask_bytes(i));
    CHECK(packed.read_mask(i).ids == files.read_mask(i).ids);
    CHECK(packed.load(i).first.pixels == files.load(i).first.pixels);
  }
  CHECK_THAT(packed.mask_name(3), Catch::EndsWith("shard-00001.cvts #1 mask"));  // 5 pairs in 2 shards: 2 and 3
  CHECK(packed.read_mask(1).ids[0] == 255);                                      // the palette mask's index 255 stays data.ignore_index
  CHECK(packed.class_names() == std::vector<std::string>{"0", "1", "2"});

  const SegmentationDataset limited = open_segmentation_pairs(DataFormat::kShards, dir.file("packed"), three_classes(), 2);
  CHECK(limited.size() == 2);
}

TEST_CASE("a pair the run could not use is skipped naming its file, and --resize is refused before anything is written",
          "[data][segmentation]") {
  TempDir dir;
  const std::string list = make_pairs(dir, 6);
  write_bytes(dir, "set/ann/0.png", gray_mask(9, 8, 0));                                                   // 10x8 image
  write_bytes(dir, "set/ann/2.png", testing::encode_png(std::vector<uint8_t>(12 * 12, 7), 12, 12, 0, 8));  // id 7 of 3 classes
  write_bytes(dir, "set/ann/4.png", testing::encode_jpeg(14, 16, 1));                                      // no PNG
  const SegmentationDataset files(list, SegmentationLayout::kList, three_classes(), 0);
  const PackReport report = pack_segmentation_pairs(files, dir.file("packed"), PackOptions{});
  CHECK(report.written == 3);
  CHECK(report.skipped == 3);
  const SegmentationDataset packed = SegmentationDataset::packed(dir.file("packed"), three_classes(), 0);
  REQUIRE(packed.size() == 3);
  CHECK(packed.read_mask_bytes(0) == files.read_mask_bytes(1));

  PackOptions resized;
  resized.resize = 8;
  CHECK_THROWS_WITH(pack_segmentation_pairs(files, dir.file("resized"), resized),
                    Catch::Contains("--resize cannot pack segmentation pairs: masks are never resampled"));
  CHECK_FALSE(std::filesystem::exists(dir.file("resized")));
}

TEST_CASE("a mask whose bytes changed in its shard is named as that pair's mask", "[data][segmentation]") {
  TempDir dir;
  const SegmentationDataset files(make_pairs(dir, 2), SegmentationLayout::kList, three_classes(), 0);
  pack_segmentation_pairs(files, dir.file("packed"), PackOptions{});
  // Shard layout: image 0, mask 0, image 1, mask 1: the last byte of mask 0 sits just before image 1.
  const auto mask_end = static_cast<std::streamoff>(files.read_image(0).encoded.size() + files.read_mask_bytes(0).size() - 1);
  const std::string shard = dir.file("packed/shard-00000.cvts");
  std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(mask_end);
  const char byte = static_cast<char>(f.get() ^ 0x10);
  f.seekp(mask_end);
  f.put(byte);
  f.close();
  const SegmentationDataset packed = SegmentationDataset::packed(dir.file("packed"), three_classes(), 0);
  CHECK_NOTHROW(packed.read_image(0));
  CHECK_THROWS_WITH(packed.read_mask(0), Catch::Contains("shard-00000.cvts #0 mask: its bytes changed since it was packed"));
  CHECK_NOTHROW(packed.read_mask(1));
}

TEST_CASE("shards of pairs and of labelled images each refuse to be read as the other, naming what they hold", "[data][segmentation]") {
  TempDir dir;
  const SegmentationDataset files(make_pairs(dir, 2), SegmentationLayout::kList, three_classes(), 0);
  pack_segmentation_pairs(files, dir.file("pairs"), PackOptions{});
  write_bytes(dir, "folder/a/0.jpg", testing::encode_jpeg(8, 8, 10));
  write_bytes(dir, "folder/b/0.jpg", testing::encode_jpeg(8, 8, 200));
  const ImageFolderDataset folder(dir.file("folder"), 0);
  pack_shards(folder, folder.class_names(), dir.file("labelled"), PackOptions{});

  CHECK_THROWS_WITH(ShardDataset(dir.file("pairs"), 0),
                    Catch::Contains("holds segmentation pairs (images with masks); read it with task: segmentation"));
  CHECK_THROWS_WITH(ShardDataset(dir.file("labelled"), 0, ShardContents::kPairs),
                    Catch::Contains("holds images with class labels, not segmentation pairs"));
  CHECK_THROWS_WITH(SegmentationDataset::packed(dir.file("labelled"), three_classes(), 0),
                    Catch::Contains("shards of images with class labels, not segmentation pairs (no pairs.txt)"));
  CHECK(pairs_format_of_path(dir.file("labelled")) == std::nullopt);

  // Packing the other kind into a folder replaces its pack, pairs.txt included.
  pack_shards(folder, folder.class_names(), dir.file("pairs"), PackOptions{});
  CHECK_FALSE(std::filesystem::exists(dir.file("pairs/pairs.txt")));
  CHECK(ShardDataset(dir.file("pairs"), 0).size() == 2);
  pack_segmentation_pairs(files, dir.file("labelled"), PackOptions{});
  CHECK(packed_pairs_layout(dir.file("labelled")) == std::string("list"));
}
