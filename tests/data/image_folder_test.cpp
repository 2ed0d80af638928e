// ImageFolder: class folders become labels, JPEGs decode through TurboJPEG, bad files are named.
#include <catch2/catch.hpp>

#include "cvtrain/core/error.h"
#include "cvtrain/data/image_folder.h"
#include "cvtrain/data/sample_pipeline.h"
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

// torchvision's make_dataset walks each class folder with sorted(os.walk(..., followlinks=True)):
// folders in path order, names sorted within each. So c/z.jpg comes before c/b/a.jpg, where a
// plain sort of the paths would put it after.
TEST_CASE("ImageFolder takes a class's images at any depth, in torchvision's order, and a link back up once", "[data]") {
  TempDir dir;
  write_bytes(dir, "root/c/z.jpg", encode_jpeg(8, 8, 0));
  write_bytes(dir, "root/c/b/a.jpg", encode_jpeg(8, 8, 0));
  write_bytes(dir, "root/c/b/deeper/m.png", cvtrain::testing::encode_png(std::vector<uint8_t>(8 * 8 * 3, 7), 8, 8, 2, 8));
  write_bytes(dir, "root/c/a b/y.jpg", encode_jpeg(8, 8, 0));  // ' ' sorts before '/'
  write_bytes(dir, "root/d/only/inside.jpg", encode_jpeg(8, 8, 0));
  std::filesystem::create_directory_symlink(dir.file("root/c"), dir.file("root/c/b/loop"));
  const ImageFolderDataset set(dir.file("root"), 0);
  std::vector<std::string> order;
  for (size_t i = 0; i < set.size(); ++i) order.push_back(set.describe(i).substr(dir.file("root").size() + 1));
  CHECK(order == std::vector<std::string>{"c/z.jpg", "c/a b/y.jpg", "c/b/a.jpg", "c/b/deeper/m.png", "d/only/inside.jpg"});
  CHECK(set.label(3) == 0);
  CHECK(set.label(4) == 1);
}

// A notebook's checkpoints folder at the root would be class 0 in torchvision's ImageFolder and shift
// every label; macOS's AppleDouble ._ files would be unreadable images.
TEST_CASE("ImageFolder leaves out dot-named folders and files: notebook, editor and OS metadata", "[data]") {
  TempDir dir;
  write_bytes(dir, "root/cat/a.jpg", encode_jpeg(8, 8, 0));
  write_bytes(dir, "root/dog/b.jpg", encode_jpeg(8, 8, 0));
  write_bytes(dir, "root/.ipynb_checkpoints/c.jpg", encode_jpeg(8, 8, 0));
  write_bytes(dir, "root/dog/.thumbs/d.jpg", encode_jpeg(8, 8, 0));
  dir.write("root/cat/._a.jpg", "AppleDouble metadata");
  const ImageFolderDataset set(dir.file("root"), 0);
  CHECK(set.class_names() == std::vector<std::string>{"cat", "dog"});
  CHECK(image_folder_classes(dir.file("root")) == set.class_names());
  REQUIRE(set.size() == 2);
  CHECK_THAT(set.describe(0), Catch::EndsWith("cat/a.jpg"));
  CHECK_THAT(set.describe(1), Catch::EndsWith("dog/b.jpg"));
  CHECK(set.label(1) == 1);
}

TEST_CASE("ImageFolder problems name the folder or file", "[data]") {
  TempDir dir;
  write_bytes(dir, "root/a/1.jpg", encode_jpeg(8, 8, 0));
  SECTION("class folders without images: all named at once, with what they hold; kept for inspection") {
    std::filesystem::create_directories(dir.file("root/b"));
    dir.write("root/c/x.heic", "");
    dir.write("root/c/deep/y.heic", "");
    dir.write("root/c/notes.txt", "");
    CHECK_THROWS_WITH(ImageFolderDataset(dir.file("root"), 0),
                      Catch::Contains("root: 2 class folder(s) hold no image file (.jpg, .jpeg,") &&
                          Catch::Contains("\n  b (holds nothing)") && Catch::Contains("\n  c (holds 2 .heic, 1 .txt)"));
    const ImageFolderDataset kept(dir.file("root"), 0, EmptyClasses::kKept);
    CHECK(kept.class_names() == std::vector<std::string>{"a", "b", "c"});
    CHECK(kept.size() == 1);
  }
  SECTION("no class folders") {
    std::filesystem::create_directories(dir.file("flat"));
    CHECK_THROWS_WITH(ImageFolderDataset(dir.file("flat"), 0), Catch::Contains("no class folders") && !Catch::Contains("val/"));
    // ImageNet's val/ as it ships: 50,000 JPEGs in one folder, their classes in a separate file.
    for (int i = 1; i <= 3; ++i) write_bytes(dir, "flat/ILSVRC2012_val_0000000" + std::to_string(i) + ".JPEG", encode_jpeg(8, 8, 0));
    CHECK_THROWS_WITH(ImageFolderDataset(dir.file("flat"), 0),
                      Catch::Contains("no class folders") && Catch::Contains("its 3 images lie in it directly, as ImageNet's val/ ships"));
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

// The header of a small JPEG made to declare `width` x `height` (the SOF0 marker's fields).
std::vector<uint8_t> claim_size(std::vector<uint8_t> jpeg, int width, int height) {
  for (size_t i = 0; i + 8 < jpeg.size(); ++i)
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {
      jpeg[i + 5] = static_cast<uint8_t>(height >> 8);
      jpeg[i + 6] = static_cast<uint8_t>(height & 0xFF);
      jpeg[i + 7] = static_cast<uint8_t>(width >> 8);
      jpeg[i + 8] = static_cast<uint8_t>(width & 0xFF);
      return jpeg;
    }
  FAIL("no SOF0 marker");
  return jpeg;
}

TEST_CASE("a JPEG whose header claims more than data.max_image_pixels is refused before decoding", "[data]") {
  TempDir dir;
  write_bytes(dir, "root/a/ok.jpg", encode_jpeg(16, 16, 0));
  write_bytes(dir, "root/a/bomb.jpg", claim_size(encode_jpeg(16, 16, 0), 30000, 30000));
  ImageFolderDataset set(dir.file("root"), 0);
  REQUIRE(set.size() == 2);
  SampleTransform transform;
  transform.image_size = 8;
  CHECK_THROWS_WITH(prepare_sample(set, 0, transform),
                    Catch::Contains("bomb.jpg") && Catch::Contains("30000x30000 = 900000000 pixels") &&
                        Catch::Contains("data.max_image_pixels 89478485"));
  CHECK_NOTHROW(prepare_sample(set, 1, transform));
  // Refused, it is an unusable sample like any other: counted, and replaced by the next one.
  BadSamples bad("data.train", set.size(), 0.5);
  CHECK(prepare_sample(set, 0, transform, &bad).width == 8);
  CHECK(bad.count() == 1);
  // The limit is the recipe's: 0 lifts it (the 900-megapixel claim then fails as truncated data).
  transform.max_image_pixels = 0;
  CHECK_THROWS_WITH(prepare_sample(set, 0, transform), Catch::Contains("truncated JPEG") && !Catch::Contains("max_image_pixels"));
}

// A PNG header claiming 30000 x 30000 over a few bytes of data: refused on the header, not after a
// decode that would allocate 2.7 GB (or fail on the missing data).
TEST_CASE("a PNG whose header claims more than data.max_image_pixels is refused before decoding", "[data]") {
  TempDir dir;
  std::vector<uint8_t> bomb = cvtrain::testing::encode_png(std::vector<uint8_t>(4 * 4 * 3, 9), 4, 4, 2, 8);
  const uint8_t side[4] = {0x00, 0x00, 0x75, 0x30};  // 30000, big-endian, as IHDR's width and height
  std::copy(side, side + 4, bomb.begin() + 16);
  std::copy(side, side + 4, bomb.begin() + 20);
  write_bytes(dir, "root/a/bomb.png", bomb);
  ImageFolderDataset set(dir.file("root"), 0);
  SampleTransform transform;
  transform.image_size = 8;
  CHECK_THROWS_WITH(prepare_sample(set, 0, transform),
                    Catch::Contains("bomb.png: 30000x30000 = 900000000 pixels is more than data.max_image_pixels 89478485"));
}

TEST_CASE("a symbolic link to nothing in an ImageFolder is a sample that is named when it fails", "[data]") {
  TempDir dir;
  write_bytes(dir, "root/a/1.jpg", encode_jpeg(8, 8, 0));
  std::filesystem::create_symlink(dir.file("gone.jpg"), dir.file("root/a/2.jpg"));
  ImageFolderDataset set(dir.file("root"), 0);
  REQUIRE(set.size() == 2);
  CHECK_THROWS_WITH(set.read(1), Catch::Contains("2.jpg") && Catch::Contains("cannot open"));
}

TEST_CASE("storage that fails under a path that is there is an I/O error, not a recipe error", "[data]") {
  TempDir dir;
  std::filesystem::create_directories(dir.file("not_a_file.jpg"));
  // Opening a folder for reading works; reading it fails (EISDIR), as a failing disk would.
  CHECK_THROWS_AS(read_file_bytes(dir.file("not_a_file.jpg")), IoError);
  CHECK_THROWS_WITH(read_file_bytes(dir.file("not_a_file.jpg")), Catch::Contains("not_a_file.jpg: read error"));
  CHECK_THROWS_AS(read_file_bytes(dir.file("missing.jpg")), IoError);
  // What a recipe can fix stays a plain Error, which the trainer reports as a recipe error.
  std::filesystem::create_directories(dir.file("flat"));
  try {
    ImageFolderDataset set(dir.file("flat"), 0);
    FAIL("expected an error");
  } catch (const IoError&) {
    FAIL("an empty folder is no I/O failure");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("no class folders"));
  }
}
