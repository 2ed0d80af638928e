// ImageFolder: class folders become labels, JPEGs decode through TurboJPEG, bad files are named.
#include <catch2/catch.hpp>

#include "cvtrain/core/error.h"
#include "cvtrain/data/image_folder.h"
#include "image_files.h"

using namespace cvtrain;
using cvtrain::testing::TempDir;

using cvtrain::testing::encode_jpeg;
using cvtrain::testing::write_bytes;

TEST_CASE("ImageFolder labels classes in sorted order and decodes JPEGs", "[data]") {
  TempDir dir;
  write_bytes(dir, "root/dog/b.jpg", encode_jpeg(40, 30, 200));
  write_bytes(dir, "root/dog/a.JPEG", encode_jpeg(40, 30, 200));
  write_bytes(dir, "root/cat/x.jpg", encode_jpeg(20, 10, 10));
  dir.write("root/cat/notes.txt", "not an image, ignored");
  ImageFolderDataset set(dir.file("root"), 0);
  REQUIRE(set.size() == 3);
  CHECK(set.class_names() == std::vector<std::string>{"cat", "dog"});
  CHECK(set.label(0) == 0);
  CHECK(set.label(1) == 1);
  CHECK_THAT(set.describe(1), Catch::EndsWith("dog/a.JPEG"));
  const Image cat = set.load(0);
  CHECK(cat.width == 20);
  CHECK(cat.height == 10);
  CHECK(cat.channels == 3);
  CHECK(std::abs(int{cat.pixels[0]} - 10) <= 3);  // red, within JPEG error
  CHECK(std::abs(int{cat.pixels[1]} - 40) <= 3);
}

TEST_CASE("ImageFolder problems name the folder or file", "[data]") {
  TempDir dir;
  write_bytes(dir, "root/a/1.jpg", encode_jpeg(8, 8, 0));
  SECTION("an empty class folder") {
    std::filesystem::create_directories(dir.file("root/b"));
    CHECK_THROWS_WITH(ImageFolderDataset(dir.file("root"), 0), Catch::Contains("root/b") && Catch::Contains("no images"));
  }
  SECTION("no class folders") {
    std::filesystem::create_directories(dir.file("flat"));
    CHECK_THROWS_WITH(ImageFolderDataset(dir.file("flat"), 0), Catch::Contains("no class folders"));
  }
  SECTION("corrupt, truncated and empty files") {
    auto jpeg = encode_jpeg(8, 8, 0);
    write_bytes(dir, "root/a/2.jpg", std::vector<uint8_t>(jpeg.begin(), jpeg.begin() + 12));
    write_bytes(dir, "root/a/3.jpg", {});
    write_bytes(dir, "root/a/4.png", {1, 2, 3, 4, 5});
    ImageFolderDataset set(dir.file("root"), 0);
    REQUIRE(set.size() == 4);
    CHECK_NOTHROW(set.load(0));
    CHECK_THROWS_WITH(set.load(1), Catch::Contains("2.jpg"));
    CHECK_THROWS_WITH(set.load(2), Catch::Contains("3.jpg") && Catch::Contains("empty"));
    CHECK_THROWS_WITH(set.load(3), Catch::Contains("4.png"));
  }
}
