// IDX reading on small generated files: gzipped and raw, labels pairing, and damaged files.
#include <catch2/catch.hpp>
#include <zlib.h>

#include <fstream>

#include "cvtrain/core/error.h"
#include "cvtrain/data/idx_dataset.h"
#include "temp_dir.h"

using namespace cvtrain;
using cvtrain::testing::TempDir;

namespace {

std::vector<uint8_t> idx_bytes(std::vector<uint32_t> dims, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out{0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<uint8_t>(d >> shift));
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void write_gz(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

void write_raw(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Three 2x3 images whose pixels are 10*i + p, labels 2, 0, 1.
void write_tiny_set(const TempDir& dir, const std::string& prefix, bool gz) {
  std::vector<uint8_t> pixels;
  for (int i = 0; i < 3; ++i)
    for (int p = 0; p < 6; ++p) pixels.push_back(static_cast<uint8_t>(10 * i + p));
  const auto images = idx_bytes({3, 2, 3}, pixels);
  const auto labels = idx_bytes({3}, {2, 0, 1});
  const std::string ext = gz ? ".gz" : "";
  (gz ? write_gz : write_raw)(dir.file(prefix + "-images-idx3-ubyte" + ext), images);
  (gz ? write_gz : write_raw)(dir.file(prefix + "-labels-idx1-ubyte" + ext), labels);
}

}  // namespace

TEST_CASE("IdxDataset reads gzipped and raw files alike", "[data]") {
  TempDir dir;
  for (const bool gz : {true, false}) {
    write_tiny_set(dir, gz ? "gz" : "raw", gz);
    IdxDataset set(dir.file(std::string(gz ? "gz" : "raw") + "-images-idx3-ubyte" + (gz ? ".gz" : "")), 0);
    REQUIRE(set.size() == 3);
    CHECK(set.channels() == 1);
    CHECK(set.num_classes() == 3);
    CHECK(set.label(0) == 2);
    CHECK(set.label(2) == 1);
    const Image image = set.load(1);
    CHECK(image.height == 2);
    CHECK(image.width == 3);
    CHECK(image.pixels == std::vector<uint8_t>{10, 11, 12, 13, 14, 15});
  }
}

TEST_CASE("IdxDataset honours a sample limit, reading only the images it keeps", "[data]") {
  TempDir dir;
  write_tiny_set(dir, "t", true);
  const IdxDataset first_two(dir.file("t-images-idx3-ubyte.gz"), 2);
  CHECK(first_two.size() == 2);
  CHECK(first_two.num_classes() == 3);  // from every label, not only the kept ones
  CHECK(first_two.load(1).pixels == std::vector<uint8_t>{10, 11, 12, 13, 14, 15});
  CHECK(IdxDataset(dir.file("t-images-idx3-ubyte.gz"), 10).size() == 3);
  const IdxArray part = read_idx(dir.file("t-images-idx3-ubyte.gz"), 1);
  CHECK(part.dims == std::vector<uint32_t>{1, 2, 3});
  CHECK(part.data.size() == 6);
  CHECK(part.items_in_file == 3);
  // A truncated file beyond the kept images is not read, so not noticed; a short labels file is.
  write_gz(dir.file("u-images-idx3-ubyte.gz"), idx_bytes({3, 2, 3}, std::vector<uint8_t>(18, 0)));
  write_gz(dir.file("u-labels-idx1-ubyte.gz"), idx_bytes({2}, {0, 1}));
  CHECK_THROWS_WITH(IdxDataset(dir.file("u-images-idx3-ubyte.gz"), 1), Catch::Contains("2 labels for 3 images"));
}

TEST_CASE("damaged IDX files give errors naming the file", "[data]") {
  TempDir dir;
  auto images = idx_bytes({3, 2, 3}, std::vector<uint8_t>(18, 0));
  SECTION("truncated data") {
    images.resize(images.size() - 5);
    write_gz(dir.file("x-images-idx3-ubyte.gz"), images);
    CHECK_THROWS_WITH(read_idx(dir.file("x-images-idx3-ubyte.gz")),
                      Catch::Contains("x-images-idx3-ubyte.gz") && Catch::Contains("truncated"));
  }
  SECTION("wrong magic") {
    images[0] = 0x1f;
    write_raw(dir.file("x-images-idx3-ubyte"), images);
    CHECK_THROWS_WITH(read_idx(dir.file("x-images-idx3-ubyte")), Catch::Contains("not an IDX file"));
  }
  SECTION("labels missing or disagreeing") {
    write_gz(dir.file("x-images-idx3-ubyte.gz"), images);
    CHECK_THROWS_WITH(IdxDataset(dir.file("x-images-idx3-ubyte.gz"), 0), Catch::Contains("no labels file"));
    write_gz(dir.file("x-labels-idx1-ubyte.gz"), idx_bytes({2}, {0, 1}));
    CHECK_THROWS_WITH(IdxDataset(dir.file("x-images-idx3-ubyte.gz"), 0), Catch::Contains("2 labels for 3 images"));
  }
  SECTION("missing file") {
    CHECK_THROWS_AS(read_idx(dir.file("absent.gz")), Error);
  }
}

TEST_CASE("labels path follows the standard naming", "[data]") {
  CHECK(idx_labels_path("/d/train-images-idx3-ubyte.gz") == "/d/train-labels-idx1-ubyte.gz");
  CHECK(idx_labels_path("/d/whatever.gz").empty());
}
