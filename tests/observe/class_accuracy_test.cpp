// Per-class accuracy: each class's top-1 from the counts, the lowest classes and the most frequent
// confusions named, JSON for eval.json, and no confusions where the matrix was not kept.
#include <catch2/catch.hpp>

#include "cvtrain/observe/class_accuracy.h"

using namespace cvtrain;

namespace {

// 3 classes, 4 outputs (a head with a spare output): rows are true classes.
ClassCounts three_class_counts() {
  ClassCounts counts;
  counts.samples = {10, 20, 0};
  counts.hits = {9, 5, 0};
  counts.outputs = 4;
  counts.confusion = {9,  1, 0, 0,   // cat: once taken for dog
                      12, 5, 0, 3,   // dog: 12 times for cat, 3 for the spare output
                      0,  0, 0, 0};  // bird: no samples
  return counts;
}

}  // namespace

TEST_CASE("per-class accuracy names the lowest classes and the most frequent confusions", "[observe]") {
  const ClassAccuracy a = class_accuracy(three_class_counts(), {"cat", "dog", "bird"});
  CHECK(a.samples == std::vector<int64_t>{10, 20, 0});
  CHECK(a.hits == std::vector<int64_t>{9, 5, 0});
  REQUIRE(a.confusions.size() == 3);
  CHECK((a.confusions[0].truth == 1 && a.confusions[0].predicted == 0 && a.confusions[0].count == 12));
  CHECK((a.confusions[1].truth == 1 && a.confusions[1].predicted == 3 && a.confusions[1].count == 3));
  CHECK((a.confusions[2].truth == 0 && a.confusions[2].predicted == 1));
  // A class without samples has no top-1 to rank; the spare output is named by its number.
  CHECK(a.lines() ==
        "lowest top-1: dog 0.2500 (20 samples), cat 0.9000 (10 samples)\n"
        "most confused: dog taken for cat 12 times (60% of dog), dog taken for output 3 3 times (15% of dog), "
        "cat taken for dog 1 times (10% of cat)\n");
  CHECK(a.lines(1, 1) == "lowest top-1: dog 0.2500 (20 samples)\nmost confused: dog taken for cat 12 times (60% of dog)\n");
  CHECK(a.json_members() ==
        "\"per_class\": [{\"class\": \"cat\", \"samples\": 10, \"top1\": 0.9}, {\"class\": \"dog\", \"samples\": 20, \"top1\": 0.25}, "
        "{\"class\": \"bird\", \"samples\": 0, \"top1\": 0}], \"confusions\": [{\"true\": \"dog\", \"predicted\": \"cat\", \"count\": 12}, "
        "{\"true\": \"dog\", \"predicted\": \"output 3\", \"count\": 3}, {\"true\": \"cat\", \"predicted\": \"dog\", \"count\": 1}]");
  CHECK(class_accuracy(three_class_counts(), {"cat", "dog", "bird"}, 1).confusions.size() == 1);
}

TEST_CASE("without the confusion matrix (too many classes to keep) per-class top-1 is still told", "[observe]") {
  ClassCounts counts = three_class_counts();
  counts.outputs = 0;
  counts.confusion.clear();
  const ClassAccuracy a = class_accuracy(counts, {"cat", "dog", "bird"});
  CHECK(a.confusions.empty());
  CHECK(a.lines() == "lowest top-1: dog 0.2500 (20 samples), cat 0.9000 (10 samples)\n");
  CHECK_THAT(a.json_members(), Catch::EndsWith("\"confusions\": []"));
}
