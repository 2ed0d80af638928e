// Validation labels by class name: a validation set without some training classes keeps the training
// numbers, one with a class training lacks is refused, and matching names change nothing.
#include <catch2/catch.hpp>

#include <filesystem>

#include "cvtrain/core/error.h"
#include "cvtrain/data/class_alignment.h"
#include "cvtrain/data/image_folder.h"
#include "cvtrain/data/shard_dataset.h"
#include "cvtrain/recipe/recipe.h"
#include "image_files.h"

using namespace cvtrain;
using cvtrain::testing::encode_jpeg;
using cvtrain::testing::TempDir;
using cvtrain::testing::write_bytes;

namespace {

void write_classes(const TempDir& dir, const std::string& root, const std::vector<std::string>& classes) {
  for (const auto& name : classes)
    for (int i = 0; i < 3; ++i) write_bytes(dir, root + "/" + name + "/" + std::to_string(i) + ".jpg", encode_jpeg(16, 16, 100));
}

std::vector<int64_t> labels_of(const Dataset& d) {
  std::vector<int64_t> labels;
  for (size_t i = 0; i < d.size(); ++i) labels.push_back(d.label(i));
  return labels;
}

}  // namespace

TEST_CASE("validation labels follow the training classes by name, for ImageFolder trees and shards", "[data]") {
  TempDir dir;
  write_classes(dir, "train", {"ant", "bee", "cat", "dog"});
  write_classes(dir, "val", {"bee", "dog"});  // alone, ImageFolder numbers them 0 and 1
  DataSpec spec;
  spec.format = DataFormat::kImageFolder;
  const auto training = class_names_at(spec, dir.file("train"));
  REQUIRE(training == std::vector<std::string>{"ant", "bee", "cat", "dog"});

  const auto val = with_training_labels(std::make_unique<ImageFolderDataset>(dir.file("val"), 0), *training);
  CHECK(labels_of(*val) == std::vector<int64_t>{1, 1, 1, 3, 3, 3});
  CHECK(val->num_classes() == 4);
  CHECK(val->class_names() == *training);
  CHECK(val->describe(3) == dir.file("val/dog/0.jpg"));

  const ImageFolderDataset folder(dir.file("val"), 0);
  pack_shards(folder, folder.class_names(), dir.file("val_shards"), PackOptions{});
  spec.format = DataFormat::kShards;
  CHECK(class_names_at(spec, dir.file("val_shards")) == std::vector<std::string>{"bee", "dog"});
  const auto shards = with_training_labels(std::make_unique<ShardDataset>(dir.file("val_shards"), 0), *training);
  CHECK(labels_of(*shards) == std::vector<int64_t>{1, 1, 1, 3, 3, 3});

  const auto same = with_training_labels(std::make_unique<ImageFolderDataset>(dir.file("train"), 0), *training);
  CHECK(labels_of(*same) == std::vector<int64_t>{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3});

  write_classes(dir, "val", {"eel"});
  CHECK_THROWS_WITH(with_training_labels(std::make_unique<ImageFolderDataset>(dir.file("val"), 0), *training),
                    Catch::Contains("1 class(es) that the training set does not have: 'eel'"));
  spec.format = DataFormat::kIdx;
  CHECK_FALSE(class_names_at(spec, dir.file("train")).has_value());  // IDX labels are numbers only
}

TEST_CASE("a validation class that training spells otherwise (case, punctuation, NFC against NFD) is named with its match", "[data]") {
  TempDir dir;
  const std::string nfc = "caf\xC3\xA9";              // 'café', é as one code point (U+00E9)
  const std::string nfd = "cafe\xCC\x81";             // 'café', e + combining acute (U+0301), as macOS writes it
  const std::string stacked = "pho\xCC\x9B\xCC\x81";  // 'phớ': o + horn + acute, two marks on one letter
  write_classes(dir, "train", {nfc, "golden_retriever", "pho", "tea"});
  write_classes(dir, "val", {nfd, "Golden Retriever", stacked, "eel"});
  DataSpec spec;
  spec.format = DataFormat::kImageFolder;
  const auto training = class_names_at(spec, dir.file("train"));
  REQUIRE(training.has_value());
  try {
    with_training_labels(std::make_unique<ImageFolderDataset>(dir.file("val"), 0), *training);
    FAIL("a validation class training lacks was accepted");
  } catch (const Error& e) {
    const std::string message = e.what();
    CHECK_THAT(message, Catch::Contains("4 class(es) that the training set does not have"));
    CHECK_THAT(message, Catch::Contains("'Golden Retriever' (training has 'golden_retriever')"));
    CHECK_THAT(message, Catch::Contains("'" + nfd + "' (training has '" + nfc + "')"));
    CHECK_THAT(message, Catch::Contains("'" + stacked + "'"));
    CHECK_THAT(message, !Catch::Contains(stacked + "' (training"));  // 'ph' (its marks' letter out) is not 'pho': no guess
    CHECK_THAT(message, Catch::Contains("'eel'"));
    CHECK_THAT(message, Catch::Contains("NFC or NFD"));
  }
  write_classes(dir, "val2", {"eel"});
  CHECK_THROWS_WITH(with_training_labels(std::make_unique<ImageFolderDataset>(dir.file("val2"), 0), *training),
                    !Catch::Contains("NFC"));  // no near miss, no spelling lecture
}

TEST_CASE("data.class_names names numbered labels, and is refused for a set that names its own or has more classes", "[data]") {
  TempDir dir;
  write_bytes(dir, "images/a.jpg", encode_jpeg(16, 16, 1));
  write_bytes(dir, "images/b.jpg", encode_jpeg(16, 16, 2));
  const std::string numbered = dir.write("numbered.txt", "images/a.jpg 2\nimages/b.jpg 0\n");  // classes 0, 1, 2
  DataSpec spec;
  spec.format = DataFormat::kList;
  const auto named = with_class_names(open_dataset(spec, numbered, 0), {"cat", "dog", "emu", "fox"});
  CHECK(named->class_names() == std::vector<std::string>{"cat", "dog", "emu", "fox"});
  CHECK(named->num_classes() == 4);  // every name a class, as the model's head
  CHECK(labels_of(*named) == std::vector<int64_t>{2, 0});
  CHECK_THROWS_WITH(with_class_names(open_dataset(spec, numbered, 0), {"cat", "dog"}),
                    Catch::Contains("has labels up to 2, but data.class_names gives 2 name(s)") &&
                        Catch::Contains("data.class_names=[] on the command line, to number them"));
  CHECK(numbered_classes(*open_dataset(spec, numbered, 0)));
  write_classes(dir, "tree", {"ant", "bee"});
  spec.format = DataFormat::kImageFolder;
  CHECK_THROWS_WITH(with_class_names(open_dataset(spec, dir.file("tree"), 0), {"x", "y"}),
                    Catch::Contains("names its classes itself ('ant', ...)"));
  CHECK_FALSE(numbered_classes(*open_dataset(spec, dir.file("tree"), 0)));
}
