// data inspect: per-class counts, the image census (formats, JPEG codings, sizes, what nvJPEG takes)
// on shards and ImageFolder trees, unreadable samples named, long class lists shortened.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "cvtrain/core/error.h"
#include "cvtrain/core/json_reader.h"
#include "cvtrain/data/dataset_inspection.h"
#include "cvtrain/data/image_folder.h"
#include "cvtrain/data/shard_dataset.h"
#include "image_files.h"

using namespace cvtrain;
using cvtrain::testing::encode_jpeg;
using cvtrain::testing::encode_jpeg_pixels;
using cvtrain::testing::encode_png;
using cvtrain::testing::TempDir;
using cvtrain::testing::write_bytes;

namespace {

std::vector<uint8_t> grey_pixels(int w, int h, int channels) { return std::vector<uint8_t>(static_cast<size_t>(w) * h * channels, 90); }

InspectOptions verifying(int64_t workers) {
  InspectOptions options;
  options.verify = true;
  options.workers = workers;
  return options;
}

}  // namespace

TEST_CASE("data inspect summarises a shards folder per class and verifies every sample", "[data]") {
  TempDir dir;
  for (int i = 0; i < 3; ++i) {
    write_bytes(dir, "src/ant/" + std::to_string(i) + ".jpg", encode_jpeg(60 + i, 40, 10));
    write_bytes(dir, "src/bee/" + std::to_string(i) + ".jpg", encode_jpeg(50, 70 + i, 200));
  }
  const ImageFolderDataset folder(dir.file("src"), 0);
  PackOptions pack;
  pack.shards = 2;
  pack_shards(folder, folder.class_names(), dir.file("packed"), pack);
  const ShardDataset shards(dir.file("packed"), 0);

  const DatasetInspection quick = inspect_dataset(shards, "packed");
  CHECK(quick.samples == 6);
  CHECK(quick.shards == 2);
  CHECK(quick.stored_bytes == shards.encoded_bytes());
  CHECK(quick.per_class == std::vector<std::pair<std::string, size_t>>{{"ant", 3}, {"bee", 3}});
  CHECK(quick.census.looked_at == 6);  // a set this small is read whole
  CHECK(quick.census.formats == std::map<std::string, size_t>{{"JPEG", 6}});
  CHECK(quick.census.gpu_decodable == 6);
  CHECK_THAT(
      quick.summary(),
      Catch::Contains("packed: 6 samples in 2 shard(s), 2 classes") && Catch::Contains("     3  ant\n") &&
          Catch::Contains("shorter side: min 40, 10% 40, median 50, 90% 50, max 50 px") &&
          Catch::Contains("longer side:  min 60, 10% 60, median 70, 90% 72, max 72 px") &&
          Catch::Contains(
              "data.decoder: nvjpeg would decode all 6 on the GPU, all in subsamplings its hardware engine takes (A100, H100, H200)\n") &&
          !Catch::Contains("progressive") && !Catch::Contains("verified") && !Catch::Contains("imbalanced"));

  InspectOptions options = verifying(2);
  std::vector<size_t> progress;
  options.progress = [&](size_t done, size_t total) { progress.push_back(done * 100 + total); };
  const DatasetInspection verified = inspect_dataset(shards, "packed", options);
  CHECK(verified.unreadable.empty());
  CHECK(progress == std::vector<size_t>{606});  // one block: 6 of 6
  CHECK_THAT(verified.summary(), Catch::EndsWith("verified: 6 of 6 samples decode\n"));
}

TEST_CASE("data inspect counts an ImageFolder's formats and the JPEGs nvJPEG leaves to the CPU, and names what does not read", "[data]") {
  TempDir dir;
  write_bytes(dir, "tree/cat/baseline1.jpg", encode_jpeg(64, 48, 10));
  write_bytes(dir, "tree/cat/baseline2.jpg", cvtrain::testing::with_exif(encode_jpeg(48, 64, 20), {{0x0112, 6}}, false));  // a phone's
  write_bytes(dir, "tree/cat/gray.jpg", encode_jpeg_pixels(grey_pixels(32, 32, 1), 32, 32, TJPF_GRAY));
  write_bytes(dir, "tree/dog/progressive.jpg",
              encode_jpeg_pixels(grey_pixels(40, 30, 3), 40, 30, TJPF_RGB, 90, TJSAMP_420, TJFLAG_PROGRESSIVE));
  write_bytes(dir, "tree/dog/cmyk.jpg", encode_jpeg_pixels(grey_pixels(16, 16, 4), 16, 16, TJPF_CMYK, 90, TJSAMP_444));
  write_bytes(dir, "tree/dog/drawing.png", encode_png(grey_pixels(20, 10, 3), 20, 10, 2, 8));
  write_bytes(dir, "tree/dog/empty.jpg", {});
  std::vector<uint8_t> bomb = encode_png(grey_pixels(4, 4, 3), 4, 4, 2, 8);  // its header claims 30000 x 30000
  for (int at : {16, 20}) {
    bomb[at + 2] = 0x75;
    bomb[at + 3] = 0x30;
  }
  write_bytes(dir, "tree/dog/bomb.png", bomb);
  const ImageFolderDataset tree(dir.file("tree"), 0);

  const DatasetInspection inspection = inspect_dataset(tree, "tree");
  CHECK(inspection.format == "ImageFolder");
  CHECK(inspection.per_class == std::vector<std::pair<std::string, size_t>>{{"cat", 3}, {"dog", 5}});
  REQUIRE(inspection.unreadable.size() == 2);  // refused on its header, as training refuses it, never decoded
  CHECK_THAT(inspection.unreadable[0], Catch::Contains("bomb.png: 30000x30000 = 900000000 pixels is more than data.max_image_pixels"));
  CHECK_THAT(inspection.unreadable[1], Catch::Contains("empty.jpg"));
  const ImageCensus& census = inspection.census;
  CHECK(census.looked_at == 6);
  CHECK(census.formats == std::map<std::string, size_t>{{"JPEG", 5}, {"PNG", 1}});
  CHECK(census.jpeg_kinds == std::map<std::string, size_t>{{"CMYK", 1}, {"EXIF-oriented", 1}, {"gray", 1}, {"progressive", 1}});
  CHECK(census.gpu_decodable == 3);  // the two baseline colour JPEGs and the gray one
  CHECK(census.hardware_subsampling == 3);
  CHECK(inspection.stored_bytes == 0);  // an unreadable sample: the total is not known
  const std::string summary = inspection.summary();
  CHECK_THAT(summary, Catch::Contains("tree: ImageFolder, 8 samples, 2 classes, about") &&
                          Catch::Contains("formats: JPEG 5 (1 CMYK, 1 EXIF-oriented, 1 gray, 1 progressive), PNG 1") &&
                          Catch::Contains("1 JPEGs (16.7%) carry an EXIF orientation") &&
                          Catch::Contains("nvjpeg would decode 3 (50.0%) on the GPU") && Catch::Contains("the other 3 on the CPU") &&
                          Catch::Contains("1 progressive JPEGs (16.7%): decoded whole") && Catch::Contains("unreadable: ") &&
                          Catch::Contains("2 of the 8 samples read are unreadable; --verify reads and decodes every sample"));

  const DatasetInspection verified = inspect_dataset(tree, "tree", verifying(3));
  CHECK(verified.unreadable.size() == 2);
  CHECK_THAT(verified.summary(), Catch::EndsWith("verified: 6 of 8 samples decode\n"));

  // --json: the same facts, as numbers a script reads.
  const JsonValue json =
      parse_json(verified.json(against_json("val", 4, CopyFinding{1, 1, {"v/a.jpg (dog) = cat/x.jpg (cat)"}, {}},
                                            CopyFinding{2, 0, {}, {"v/b.jpg looks like cat/y.jpg", "v/c.jpg looks like cat/z.jpg"}})),
                 "json");
  CHECK(json.text("format") == "ImageFolder");
  CHECK(json.number("samples") == 8);
  REQUIRE(json["classes"].array().size() == 2);
  CHECK(json["classes"].array()[1].text("class") == "dog");
  CHECK(json["classes"].array()[1].number("samples") == 5);
  CHECK(json["census"].number("looked_at") == 6);
  CHECK(json["census"]["formats"].number("JPEG") == 5);
  CHECK(json["census"]["jpeg_kinds"].number("progressive") == 1);
  CHECK(json["census"].number("gpu_decodable") == 3);
  CHECK(json["census"]["shorter_side"].number("min") == 10);  // the 20 x 10 PNG
  CHECK(json["census"]["longer_side"].number("max") == 64);
  REQUIRE(json["unreadable"].array().size() == 2);
  CHECK_THAT(*json["unreadable"].array()[1].string(), Catch::Contains("empty.jpg"));
  CHECK(json["copies"].number("copies") == 0);
  CHECK(json["against"].number("samples") == 4);
  CHECK(json["against"]["found"].number("other_class") == 1);
  CHECK(json["against"]["found"]["other_class_examples"].array().size() == 1);
  CHECK(json["look_alikes"].number("copies") == 0);
  CHECK(json["against"]["look_alikes"].number("copies") == 2);
  CHECK(json["against"]["look_alikes"]["same_class_examples"].array().size() == 2);
}

TEST_CASE("data inspect reads a spread of a large set unless verifying, and shortens a long class list", "[data]") {
  TempDir dir;
  const std::vector<uint8_t> wide = encode_jpeg(30, 20, 10), tall = encode_jpeg(20, 40, 10);
  for (int c = 0; c < 25; ++c)  // class kNN holds NN + 1 samples; the first half wide images, the rest tall
    for (int i = 0; i <= c; ++i) write_bytes(dir, fmt::format("tree/k{:02}/{}.jpg", c, i), c < 12 ? wide : tall);
  const ImageFolderDataset tree(dir.file("tree"), 0);
  REQUIRE(tree.size() == 325);

  InspectOptions few;
  few.census_samples = 10;
  const DatasetInspection spread = inspect_dataset(tree, "tree", few);
  CHECK(spread.census.looked_at == 10);
  CHECK_FALSE(spread.census.every_sample);
  bool saw_wide = false, saw_tall = false;
  for (const ImageSize& s : spread.census.sizes) (s.width == 30 ? saw_wide : saw_tall) = true;
  CHECK((saw_wide && saw_tall));  // spread over the set, not its first ten files
  const std::string summary = spread.summary();
  CHECK_THAT(summary,
             Catch::Contains("images (10 read, spread over the set; --verify reads all)") &&
                 Catch::Contains("samples per class: 1 to 25, median 13") &&
                 Catch::Contains("smallest: k00 1, k01 2, k02 3, k03 4, k04 5") &&
                 Catch::Contains("largest:  k20 21, k21 22, k22 23, k23 24, k24 25") && Catch::Contains("(--all-classes lists all 25)") &&
                 Catch::Contains("imbalanced: the largest class has 25.0x the samples of the smallest") && !Catch::Contains("    13  k12"));
  CHECK_THAT(spread.summary(true), Catch::Contains("    13  k12\n") && !Catch::Contains("smallest:"));

  const DatasetInspection all = inspect_dataset(tree, "tree", verifying(2));
  CHECK(all.census.looked_at == 325);
  CHECK(all.stored_bytes == 78 * wide.size() + 247 * tall.size());  // 1 + ... + 12 wide, the rest tall
  CHECK_THAT(all.summary(), Catch::Contains("images (all 325 read)") && Catch::Contains("verified: 325 of 325"));
}

TEST_CASE("data inspect of a set without JPEGs says nvJPEG takes none of them", "[data]") {
  TempDir dir;
  const std::vector<uint8_t> rgb(12 * 10 * 3, 77);
  for (const char* name : {"a/0.png", "a/1.png", "b/0.png"}) write_bytes(dir, std::string("pngs/") + name, encode_png(rgb, 12, 10, 2, 8));
  const ImageFolderDataset pngs(dir.file("pngs"), 0);
  const std::string summary = inspect_dataset(pngs, "pngs").summary();
  CHECK_THAT(summary,
             Catch::Contains("formats: PNG 3") &&
                 Catch::Contains("data.decoder: nvjpeg would decode none of them on the GPU (it takes baseline JPEGs): all 3 on the CPU") &&
                 !Catch::Contains("subsamplings"));
}
