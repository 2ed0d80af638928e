// Image lists: CSV (header, quotes, Excel's BOM and CRLF), TSV and PATH LABEL text files; labels
// named or numbered; every malformed line named by file:line; a list pointing nowhere refused.
#include <catch2/catch.hpp>

#include "cvtrain/core/error.h"
#include "cvtrain/data/dataset.h"
#include "cvtrain/data/image_list.h"
#include "cvtrain/recipe/recipe.h"
#include "image_files.h"

using namespace cvtrain;
using cvtrain::testing::encode_jpeg;
using cvtrain::testing::TempDir;
using cvtrain::testing::write_bytes;

namespace {

// images/a.jpg (20 wide), images/b.jpg (30), images/sub dir/c, d.jpg (40): a space and a comma in the last.
void write_images(const TempDir& dir) {
  write_bytes(dir, "images/a.jpg", encode_jpeg(20, 10, 10));
  write_bytes(dir, "images/b.jpg", encode_jpeg(30, 10, 10));
  write_bytes(dir, "images/sub dir/c, d.jpg", encode_jpeg(40, 10, 10));
}

std::string failure(const std::string& list) {
  try {
    read_image_list(list);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a CSV list names its columns in a header, paths are relative to it, labels are sorted names", "[data]") {
  TempDir dir;
  write_images(dir);
  // Excel's byte-order mark and CRLF, columns in another order, an extra column, a quoted path.
  const std::string csv = dir.write("train.csv",
                                    "\xEF\xBB\xBFid,Label,File Name\r\n"
                                    "1,dog,images/a.jpg\r\n"
                                    "2,cat,images/b.jpg\r\n"
                                    "\r\n"
                                    "3,dog,\"images/sub dir/c, d.jpg\"\r\n");
  const ImageListDataset list(csv, 0);
  REQUIRE(list.size() == 3);
  CHECK(list.class_names() == std::vector<std::string>{"cat", "dog"});
  CHECK(std::vector<int64_t>{list.label(0), list.label(1), list.label(2)} == std::vector<int64_t>{1, 0, 1});
  CHECK(list.describe(2) == dir.file("images/sub dir/c, d.jpg"));
  CHECK(list.load(0).width == 20);
  CHECK(list.load(2).width == 40);
  CHECK(detect_format(csv) == DataFormat::kList);
  CHECK(ImageListDataset(csv, 2).size() == 2);  // data.max_samples: a spread of them
}

TEST_CASE("TSV lists and PATH LABEL text lists read the same images, and whole-number labels are used as they are", "[data]") {
  TempDir dir;
  write_images(dir);
  const ImageList tsv = read_image_list(dir.write("val.tsv", "path\tclass\n" + dir.file("images/b.jpg") + "\t7\nimages/a.jpg\t2\n"));
  CHECK(tsv.files == std::vector<std::string>{dir.file("images/b.jpg"), dir.file("images/a.jpg")});  // absolute paths kept
  CHECK(tsv.labels == std::vector<int64_t>{7, 2});
  CHECK(tsv.classes.size() == 8);  // 0 to 7
  // Caffe's train.txt: the label is the last word, so a path may hold spaces; # comments skipped.
  const ImageList txt = read_image_list(dir.write("train.txt", "# caffe list\nimages/sub dir/c, d.jpg 1\n  images/a.jpg   0  \n"));
  CHECK(txt.files == std::vector<std::string>{dir.file("images/sub dir/c, d.jpg"), dir.file("images/a.jpg")});
  CHECK(txt.labels == std::vector<int64_t>{1, 0});
  CHECK(txt.classes == std::vector<std::string>{"0", "1"});
}

TEST_CASE("a malformed list is refused naming the file, the line and what to write", "[data]") {
  TempDir dir;
  write_images(dir);
  const std::string no_path = dir.write("a.csv", "image_id,breed\nimages/a.jpg,dog\n");
  CHECK_THAT(failure(no_path),
             Catch::StartsWith(no_path + ":1: no path column among (image_id, breed)") && Catch::Contains("one of path, file, filename"));
  const std::string no_label = dir.write("b.csv", "path,breed\nimages/a.jpg,dog\n");
  CHECK_THAT(failure(no_label), Catch::StartsWith(no_label + ":1: no label column among (path, breed)"));
  const std::string short_line = dir.write("c.csv", "path,label\nimages/a.jpg,dog\n\nimages/b.jpg\n");
  CHECK_THAT(failure(short_line),
             Catch::StartsWith(short_line + ":4: 1 field(s), the header has 2 (path, label)") && Catch::Contains("goes in double quotes"));
  const std::string comma = dir.write("d.csv", "path,label\nimages/sub dir/c, d.jpg,dog\n");
  CHECK_THAT(failure(comma), Catch::StartsWith(comma + ":2: 3 field(s)"));
  const std::string open_quote = dir.write("e.csv", "path,label\n\"images/a.jpg,dog\n");
  CHECK_THAT(failure(open_quote), Catch::StartsWith(open_quote + ":2: a quote (\") is not closed"));
  const std::string no_label_value = dir.write("f.csv", "path,label\nimages/a.jpg,\n");
  CHECK_THAT(failure(no_label_value), Catch::StartsWith(no_label_value + ":2: an empty label"));
  const std::string one_word = dir.write("g.txt", "images/a.jpg 0\nimages/b.jpg\n");
  CHECK_THAT(failure(one_word), Catch::StartsWith(one_word + ":2: 'images/b.jpg' is not PATH LABEL"));
  CHECK_THAT(failure(dir.write("h.csv", "\n# nothing\n")), Catch::Contains("h.csv: no lines"));
  CHECK_THAT(failure(dir.write("i.csv", "path,label\n")), Catch::Contains("i.csv: lists no images"));
  CHECK_THAT(failure(dir.write("j.json", "[]")), Catch::Contains("j.json: an image list is a .csv or .tsv file"));
  CHECK_THAT(failure(dir.write("k.txt", "images/a.jpg 0\nimages/b.jpg 4000000\n")),
             Catch::Contains("label 4000000 numbers a class past a million"));
  // Paths relative to another folder than the list's: refused at once, not sample by sample.
  const std::string elsewhere = dir.write("lists/train.csv", "path,label\nimages/a.jpg,dog\nimages/b.jpg,cat\n");
  CHECK_THROWS_WITH(ImageListDataset(elsewhere, 0),
                    Catch::Contains("none of the 2 listed files checked exists, e.g. " + dir.file("lists/images/a.jpg")) &&
                        Catch::Contains("relative paths are taken from the list's folder"));
  // data.root names the folder they start from instead (a Kaggle list beside, not inside, its images).
  const ImageListDataset rooted(elsewhere, 0, dir.file(""));
  CHECK(rooted.describe(1) == dir.file("images/b.jpg"));
  CHECK(rooted.load(1).width == 30);
  CHECK_THROWS_WITH(ImageListDataset(elsewhere, 0, dir.file("lists")),
                    Catch::Contains("(relative paths are taken from data.root, " + dir.file("lists")));
  // One missing file among others is an unreadable sample, as in an ImageFolder.
  const ImageListDataset one_missing(dir.write("l.csv", "path,label\nimages/a.jpg,dog\nimages/gone.jpg,cat\n"), 0);
  CHECK_THROWS_WITH(one_missing.read(1), Catch::Contains("images/gone.jpg: cannot open"));
}
