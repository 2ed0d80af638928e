// Packed shards: byte-exact round trip of an ImageFolder, same samples in the same order,
// re-encoding on resize, bad sources skipped, malformed shards named.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "cvtrain/core/error.h"
#include "cvtrain/data/dataset_inspection.h"
#include "cvtrain/data/image_folder.h"
#include "cvtrain/data/jpeg_coding.h"
#include "cvtrain/data/sample_pipeline.h"
#include "cvtrain/data/shard_dataset.h"
#include "cvtrain/recipe/recipe.h"
#include "image_files.h"

using namespace cvtrain;
using cvtrain::testing::encode_jpeg;
using cvtrain::testing::TempDir;
using cvtrain::testing::write_bytes;

namespace {

void make_folder(const TempDir& dir, int per_class) {
  for (int i = 0; i < per_class; ++i) {
    write_bytes(dir, "src/ant/" + std::to_string(i) + ".jpg", encode_jpeg(60 + i, 40, static_cast<uint8_t>(10 * i)));
    write_bytes(dir, "src/bee/" + std::to_string(i) + ".jpg", encode_jpeg(50, 70 + i, 200, static_cast<uint8_t>(5 * i)));
  }
}

// A source whose storage fails for good at one sample (a lost disk, not a damaged image).
class FailingAt : public ImageFolderDataset {
 public:
  FailingAt(const std::string& root, size_t bad) : ImageFolderDataset(root, 0), bad_(bad) {}
  RawSample read(size_t index) const override {
    if (index == bad_) throw std::runtime_error("storage lost");
    return ImageFolderDataset::read(index);
  }

 private:
  size_t bad_;
};

// DIR/src (3 JPEGs of each of 2 classes) packed into DIR/packed as one shard; returns its path.
std::string pack_three_per_class(const TempDir& dir) {
  make_folder(dir, 3);
  const ImageFolderDataset folder(dir.file("src"), 0);
  pack_shards(folder, folder.class_names(), dir.file("packed"), PackOptions{});
  return dir.file("packed/shard-00000.cvts");
}

// Rewrites a shard as version 1 wrote it: index entries without their checksum, magic CVTSHRD1.
void rewrite_as_version_1(const std::string& shard) {
  std::ifstream in(shard, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  uint64_t count = 0, index_offset = 0;
  std::memcpy(&count, bytes.data() + bytes.size() - 24, 8);  // little-endian, as x86
  std::memcpy(&index_offset, bytes.data() + bytes.size() - 16, 8);
  std::string rewritten = bytes.substr(0, index_offset);
  for (uint64_t i = 0; i < count; ++i) rewritten += bytes.substr(index_offset + i * 20, 16);
  rewritten += bytes.substr(bytes.size() - 24, 16) + "CVTSHRD1";
  std::ofstream(shard, std::ios::binary | std::ios::trunc) << rewritten;
}

}  // namespace

TEST_CASE("a sample whose bytes changed since the pack is unreadable and named, and version-1 shards still read", "[data]") {
  TempDir dir;
  const std::string shard = pack_three_per_class(dir);
  // Sample 0 is ant/0.jpg, stored byte for byte from offset 0: one flipped bit in its entropy-coded
  // data still decodes (into other pixels), so only the checksum can tell.
  const auto middle = static_cast<std::streamoff>(std::filesystem::file_size(dir.file("src/ant/0.jpg")) / 2);
  std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(middle);
  const char byte = static_cast<char>(f.get() ^ 0x04);
  f.seekp(middle);
  f.put(byte);
  f.close();

  const ShardDataset damaged(dir.file("packed"), 0);
  CHECK_THROWS_WITH(damaged.read(0), Catch::Contains("shard-00000.cvts #0: its bytes changed since it was packed") &&
                                         Catch::Contains("copy the shard again, or repack"));
  CHECK_NOTHROW(damaged.read(1));
  InspectOptions verify;
  verify.verify = true;
  verify.workers = 3;
  const DatasetInspection verified = inspect_dataset(damaged, "packed", verify);
  REQUIRE(verified.unreadable.size() == 1);
  CHECK_THAT(verified.unreadable[0], Catch::Contains("#0: its bytes changed"));
  CHECK_THAT(verified.summary(), Catch::EndsWith("verified: 5 of 6 samples decode\n"));

  rewrite_as_version_1(shard);  // an older pack: read as before, and blind to the flipped bit
  const ShardDataset old(dir.file("packed"), 0);
  REQUIRE(old.size() == 6);
  CHECK(old.label(5) == 1);
  CHECK_NOTHROW(old.load(0));
  std::ifstream source(dir.file("src/ant/2.jpg"), std::ios::binary);
  const std::vector<uint8_t> original((std::istreambuf_iterator<char>(source)), std::istreambuf_iterator<char>());
  CHECK(old.read(2).encoded == original);
}

TEST_CASE("a pack that fails part way leaves the folder's earlier pack whole, and a folder packs onto itself", "[data]") {
  TempDir dir;
  make_folder(dir, 4);
  const ImageFolderDataset folder(dir.file("src"), 0);
  PackOptions two;
  two.shards = 2;
  pack_shards(folder, folder.class_names(), dir.file("packed"), two);
  PackOptions three;
  three.shards = 3;
  const FailingAt failing(dir.file("src"), 6);
  CHECK_THROWS_WITH(pack_shards(failing, failing.class_names(), dir.file("packed"), three), "storage lost");
  {
    const ShardDataset earlier(dir.file("packed"), 0);
    CHECK(earlier.size() == 8);
    CHECK(earlier.shard_files().size() == 2);
    CHECK(earlier.read(7).encoded == folder.read(7).encoded);
    // Repacked onto itself (say, to change the shard count): read whole before it is replaced.
    pack_shards(earlier, earlier.class_names(), dir.file("packed"), three);
  }
  const ShardDataset repacked(dir.file("packed"), 0);
  CHECK(repacked.shard_files().size() == 3);
  REQUIRE(repacked.size() == 8);
  for (size_t i = 0; i < 8; ++i) CHECK(repacked.read(i).encoded == folder.read(i).encoded);
  for (const auto& entry : std::filesystem::directory_iterator(dir.file("packed"))) CHECK(entry.path().extension() != ".tmp");
}

TEST_CASE("packing an ImageFolder keeps every sample, byte for byte, in order", "[data]") {
  TempDir dir;
  make_folder(dir, 7);
  const ImageFolderDataset folder(dir.file("src"), 0);
  PackOptions options;
  options.shards = 3;
  const PackReport report = pack_shards(folder, folder.class_names(), dir.file("packed"), options);
  CHECK(report.written == 14);
  CHECK(report.skipped == 0);
  CHECK(report.reencoded == 0);
  const ShardDataset shards(dir.file("packed"), 0);
  REQUIRE(shards.size() == 14);
  CHECK(shards.shard_files().size() == 3);
  CHECK(shards.class_names() == std::vector<std::string>{"ant", "bee"});
  for (size_t i = 0; i < 14; ++i) {
    CHECK(shards.label(i) == folder.label(i));
    CHECK(shards.read(i).encoded == folder.read(i).encoded);
  }
  CHECK_THAT(shards.describe(13), Catch::Contains("shard-00002.cvts #"));
  // Same bytes, so the training pipeline makes the same images from both.
  AugmentSpec augment;
  augment.random_resized_crop = {0.3, 1.0};
  augment.hflip = FlipChance{0.5};
  const SampleTransform t{&augment, 32, 1, 0};
  CHECK(prepare_sample(shards, 5, t).pixels == prepare_sample(folder, 5, t).pixels);
}

TEST_CASE("packing stores a progressive JPEG as baseline with the same pixels, unless told to keep it", "[data]") {
  TempDir dir;
  make_folder(dir, 2);
  std::vector<uint8_t> texture(90 * 60 * 3);
  for (size_t i = 0; i < texture.size(); ++i) texture[i] = static_cast<uint8_t>(i * 29 % 253);
  const std::vector<uint8_t> progressive =
      cvtrain::testing::encode_jpeg_pixels(texture, 90, 60, TJPF_RGB, 88, TJSAMP_420, TJFLAG_PROGRESSIVE);
  write_bytes(dir, "src/bee/progressive.jpg", progressive);
  const ImageFolderDataset folder(dir.file("src"), 0);
  const size_t at = folder.size() - 1;  // bee/progressive.jpg sorts last
  REQUIRE(folder.read(at).encoded == progressive);

  const PackReport report = pack_shards(folder, folder.class_names(), dir.file("packed"), PackOptions{});
  CHECK(report.transcoded == 1);
  CHECK(report.reencoded == 0);
  const ShardDataset shards(dir.file("packed"), 0);
  const std::vector<uint8_t> stored = shards.read(at).encoded;
  CHECK_FALSE(jpeg_coding(stored)->progressive);
  CHECK(shards.load(at).pixels == folder.load(at).pixels);
  for (size_t i = 0; i < at; ++i) CHECK(shards.read(i).encoded == folder.read(i).encoded);  // baseline files: byte for byte

  PackOptions keep;
  keep.keep_progressive = true;
  CHECK(pack_shards(folder, folder.class_names(), dir.file("kept"), keep).transcoded == 0);
  CHECK(ShardDataset(dir.file("kept"), 0).read(at).encoded == progressive);
}

TEST_CASE("packing reports its progress after each block, in order, ending with every sample", "[data]") {
  TempDir dir;
  make_folder(dir, 80);  // 160 samples: blocks of 64 per worker
  const ImageFolderDataset folder(dir.file("src"), 0);
  PackOptions options;
  options.shards = 3;
  options.workers = 1;
  std::vector<size_t> reported;
  options.progress = [&](size_t done, size_t total) {
    CHECK(total == 160);
    reported.push_back(done);
  };
  pack_shards(folder, folder.class_names(), dir.file("packed"), options);
  // Shards of 53, 53 and 54 samples, each in blocks of at most 64: one report per block.
  CHECK(reported == std::vector<size_t>{53, 106, 160});
}

TEST_CASE("a class name with a line break is refused before anything is written, since classes.txt holds one per line", "[data]") {
  TempDir dir;
  make_folder(dir, 2);
  std::filesystem::rename(dir.file("src/bee"), dir.file("src/b\nee"));
  const ImageFolderDataset folder(dir.file("src"), 0);
  CHECK_THROWS_WITH(pack_shards(folder, folder.class_names(), dir.file("packed"), PackOptions{}), Catch::Contains("holds a line break"));
  CHECK_FALSE(std::filesystem::exists(dir.file("packed")));
}

TEST_CASE("packing with --resize re-encodes large images and skips unusable ones", "[data]") {
  TempDir dir;
  make_folder(dir, 2);
  write_bytes(dir, "src/bee/broken.jpg", {0xFF, 0xD8, 0xFF, 0x00, 0x01});
  // A PNG header claiming 30000 x 30000: skipped on that claim (data.max_image_pixels' default), not decoded.
  std::vector<uint8_t> bomb = cvtrain::testing::encode_png(std::vector<uint8_t>(4 * 4 * 3, 9), 4, 4, 2, 8);
  for (int at : {16, 20}) {
    bomb[at + 2] = 0x75;
    bomb[at + 3] = 0x30;
  }
  write_bytes(dir, "src/ant/bomb.png", bomb);
  const ImageFolderDataset folder(dir.file("src"), 0);
  PackOptions options;
  options.resize = 30;
  const PackReport report = pack_shards(folder, folder.class_names(), dir.file("packed"), options);
  CHECK(report.written == 4);
  CHECK(report.skipped == 2);
  CHECK(report.reencoded == 4);
  const ShardDataset shards(dir.file("packed"), 0);
  for (size_t i = 0; i < shards.size(); ++i) {
    const Image image = shards.load(i);
    CHECK(std::min(image.width, image.height) == 30);
  }
  // Packing again replaces the shards; a folder with other files is refused.
  CHECK_NOTHROW(pack_shards(folder, folder.class_names(), dir.file("packed"), options));
  dir.write("packed/notes.txt", "mine");
  CHECK_THROWS_WITH(pack_shards(folder, folder.class_names(), dir.file("packed"), options), Catch::Contains("notes.txt"));
}

TEST_CASE("malformed shards are errors naming the shard", "[data]") {
  TempDir dir;
  const std::string shard = pack_three_per_class(dir);
  SECTION("truncated") {
    std::filesystem::resize_file(shard, std::filesystem::file_size(shard) - 5);
    CHECK_THROWS_WITH(ShardDataset(dir.file("packed"), 0), Catch::Contains("shard-00000.cvts: no shard footer") && Catch::Contains("truncated"));
  }
  SECTION("an index that points past the data") {
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-24, std::ios::end);
    const char count[8] = {100, 0, 0, 0, 0, 0, 0, 0};
    f.write(count, 8);
    f.close();
    CHECK_THROWS_WITH(ShardDataset(dir.file("packed"), 0), Catch::Contains("shard-00000.cvts") && Catch::Contains("index"));
  }
  SECTION("labels beyond classes.txt") {
    dir.write("packed/classes.txt", "ant\n");
    CHECK_THROWS_WITH(ShardDataset(dir.file("packed"), 0), Catch::Contains("label 1"));
  }
  SECTION("not a shards folder") {
    CHECK_THROWS_WITH(ShardDataset(dir.file("src"), 0), Catch::Contains("classes.txt"));
  }
}
