// Edit distance and "did you mean" suggestions.
#include <catch2/catch.hpp>

#include "cvtrain/core/text.h"

using namespace cvtrain;

TEST_CASE("edit distance counts insertions, deletions and substitutions", "[core]") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("lr", "lr") == 0);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("epochs", "epoch") == 1);
  CHECK(edit_distance("", "abc") == 3);
}

TEST_CASE("closest_match suggests only plausible typos", "[core]") {
  const std::vector<std::string> keys{"train.epochs", "train.max_steps", "optim.lr"};
  CHECK(closest_match("train.epoch", keys) == "train.epochs");
  CHECK(closest_match("optim.lrr", keys) == "optim.lr");
  CHECK(closest_match("completely.different", keys).empty());
}
