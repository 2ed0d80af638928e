// Duplicate samples: byte-identical copies and look-alikes (re-encoded, resized) within a set
// (under the same class or another) and between a training and a validation set, named; different
// images never taken for copies.
#include <catch2/catch.hpp>

#include "cvtrain/data/dataset_inspection.h"
#include "cvtrain/data/duplicate_samples.h"
#include "cvtrain/data/image_folder.h"
#include "image_files.h"

using namespace cvtrain;
using cvtrain::testing::encode_jpeg;
using cvtrain::testing::encode_jpeg_pixels;
using cvtrain::testing::scene_rgb;
using cvtrain::testing::TempDir;
using cvtrain::testing::write_bytes;

TEST_CASE("content fingerprints are equal for the same bytes and differ for others, one byte apart or longer", "[data]") {
  RawSample a, b;
  a.encoded = encode_jpeg(16, 16, 10);
  b.encoded = a.encoded;
  CHECK(content_fingerprint(a) == content_fingerprint(b));
  b.encoded.back() ^= 1;
  CHECK(content_fingerprint(a) != content_fingerprint(b));
  b.encoded = a.encoded;
  b.encoded.push_back(0);
  CHECK(content_fingerprint(a) != content_fingerprint(b));
  RawSample pixels;  // formats that hold pixels are fingerprinted by them
  pixels.image = Image{std::vector<uint8_t>(28 * 28, 3), 28, 28, 1};
  RawSample same_pixels = pixels;
  CHECK(content_fingerprint(pixels) == content_fingerprint(same_pixels));
}

TEST_CASE("data inspect --verify names copies within a set, those under another class first", "[data]") {
  TempDir dir;
  for (int i = 0; i < 4; ++i) write_bytes(dir, "train/cat/" + std::to_string(i) + ".jpg", encode_jpeg(20 + i, 20, 10));
  write_bytes(dir, "train/cat/copy.jpg", encode_jpeg(20, 20, 10));  // cat/0.jpg again
  write_bytes(dir, "train/dog/0.jpg", encode_jpeg(30, 20, 200));
  write_bytes(dir, "train/dog/cat-photo.jpg", encode_jpeg(21, 20, 10));  // cat/1.jpg, filed as a dog
  const ImageFolderDataset train(dir.file("train"), 0);
  InspectOptions verify;
  verify.verify = true;
  const DatasetInspection inspection = inspect_dataset(train, "train", verify);
  CHECK(inspection.copies.copies == 2);
  CHECK(inspection.copies.other_class == 1);
  const std::string summary = inspection.summary();
  CHECK_THAT(summary, Catch::Contains("copies: 2 sample(s) hold the same bytes as an earlier one") &&
                          Catch::Contains("1 of them under another class (label noise, or one image in two classes)"));
  const auto dog_line = summary.find("dog/cat-photo.jpg (dog) = " + dir.file("train/cat/1.jpg") + " (cat)");
  const auto cat_line = summary.find("cat/copy.jpg = " + dir.file("train/cat/0.jpg"));
  REQUIRE(dog_line != std::string::npos);
  REQUIRE(cat_line != std::string::npos);
  CHECK(dog_line < cat_line);
  // Without --verify nothing is read whole, so nothing is said of copies.
  CHECK_THAT(inspect_dataset(train, "train").summary(), !Catch::Contains("copies"));
}

TEST_CASE("a validation set's samples that are training samples are found, and distinct ones are not", "[data]") {
  TempDir dir;
  for (int i = 0; i < 6; ++i)
    write_bytes(dir, "train/" + std::string(i % 2 ? "a" : "b") + "/" + std::to_string(i) + ".jpg", encode_jpeg(16 + i, 16, 50));
  write_bytes(dir, "val/a/leaked.jpg", encode_jpeg(17, 16, 50));  // train/a/1.jpg
  write_bytes(dir, "val/b/leaked.jpg", encode_jpeg(19, 16, 50));  // train/a/3.jpg, under b here
  write_bytes(dir, "val/b/new.jpg", encode_jpeg(40, 16, 50));
  const ImageFolderDataset train(dir.file("train"), 0), val(dir.file("val"), 0);
  const Fingerprints train_prints = fingerprint_all(train, 2, false, {}).bytes, val_prints = fingerprint_all(val, 2, false, {}).bytes;
  const CopyFinding leak = copies_between(train_prints, train, val_prints, val);
  CHECK(leak.copies == 2);
  CHECK(leak.other_class == 1);
  REQUIRE(leak.other_class_examples.size() == 1);
  CHECK(leak.other_class_examples[0] == dir.file("val/b/leaked.jpg") + " (b) = " + dir.file("train/a/3.jpg") + " (a)");
  CHECK(copies_within(train_prints, train).copies == 0);
  const Fingerprints unreadable(train.size());  // nothing read: nothing matched
  CHECK(copies_between(unreadable, train, val_prints, val).copies == 0);
}

namespace {

// Scene `number` drawn w x h and saved as a JPEG of `quality`.
std::vector<uint8_t> scene_jpeg(int number, int w, int h, int quality) {
  return encode_jpeg_pixels(scene_rgb(w, h, number), w, h, TJPF_RGB, quality);
}

}  // namespace

TEST_CASE("data inspect --verify names look-alikes: a picture saved again smaller or at another quality, not its byte copies", "[data]") {
  TempDir dir;
  for (int scene = 0; scene < 6; ++scene)
    write_bytes(dir, "train/" + std::string(scene < 3 ? "cat" : "dog") + "/" + std::to_string(scene) + ".jpg",
                scene_jpeg(scene, 96, 72, 90));
  write_bytes(dir, "train/cat/small.jpg", scene_jpeg(1, 60, 45, 90));    // cat/1.jpg, resized
  write_bytes(dir, "train/dog/resaved.jpg", scene_jpeg(2, 96, 72, 50));  // cat/2.jpg at quality 50, filed as a dog
  write_bytes(dir, "train/dog/zcopy.jpg", scene_jpeg(4, 96, 72, 90));    // dog/4.jpg byte for byte: a copy, not a look-alike
  const ImageFolderDataset train(dir.file("train"), 0);
  InspectOptions verify;
  verify.verify = true;
  const DatasetInspection inspection = inspect_dataset(train, "train", verify);
  CHECK(inspection.copies.copies == 1);
  CHECK(inspection.look_alikes.copies == 2);
  CHECK(inspection.look_alikes.other_class == 1);
  CHECK(inspection.look_alikes.other_class_examples ==
        std::vector<std::string>{dir.file("train/dog/resaved.jpg") + " (dog) looks like " + dir.file("train/cat/2.jpg") + " (cat)"});
  CHECK(inspection.look_alikes.same_class_examples ==
        std::vector<std::string>{dir.file("train/cat/small.jpg") + " looks like " + dir.file("train/cat/1.jpg")});
  CHECK_THAT(inspection.summary(), Catch::Contains("look-alikes: 2 sample(s) look like an earlier one without holding its bytes") &&
                                       Catch::Contains("1 of them under another class:"));

  // A validation set: one training picture resized, one byte for byte, one new.
  write_bytes(dir, "val/cat/a.jpg", scene_jpeg(0, 80, 60, 75));
  write_bytes(dir, "val/dog/b.jpg", scene_jpeg(5, 96, 72, 90));
  write_bytes(dir, "val/dog/new.jpg", scene_jpeg(9, 96, 72, 90));
  const ImageFolderDataset val(dir.file("val"), 0);
  const SamplePrints val_prints = fingerprint_all(val, 2, true, {});
  CHECK(copies_between(inspection.prints.bytes, train, val_prints.bytes, val).copies == 1);
  const CopyFinding leak = look_alikes_between(inspection.prints, train, val_prints, val, 2);
  CHECK(leak.copies == 1);
  CHECK(leak.same_class_examples == std::vector<std::string>{dir.file("val/cat/a.jpg") + " looks like " + dir.file("train/cat/0.jpg")});
}
