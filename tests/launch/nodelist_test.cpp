// Slurm host-list expansion.
#include <catch2/catch.hpp>

#include "cvtrain/core/error.h"
#include "cvtrain/launch/nodelist.h"

using namespace cvtrain;
using Hosts = std::vector<std::string>;

TEST_CASE("node lists expand ranges, keep zero padding and mix plain names", "[launch]") {
  CHECK(expand_nodelist("node7") == Hosts{"node7"});
  CHECK(expand_nodelist("gpu[01-04,07]") == Hosts{"gpu01", "gpu02", "gpu03", "gpu04", "gpu07"});
  CHECK(expand_nodelist("a1,b[2-3]") == Hosts{"a1", "b2", "b3"});
  CHECK(expand_nodelist("gpu[08-10]") == Hosts{"gpu08", "gpu09", "gpu10"});
  CHECK(expand_nodelist("r[1-2]-n[01-02]") == Hosts{"r1-n01", "r1-n02", "r2-n01", "r2-n02"});
  CHECK(expand_nodelist("x[3],y") == Hosts{"x3", "y"});
}

TEST_CASE("malformed node lists are errors naming the list", "[launch]") {
  CHECK_THROWS_WITH(expand_nodelist("gpu[01-04"), Catch::Contains("gpu[01-04") && Catch::Contains("unbalanced"));
  CHECK_THROWS_WITH(expand_nodelist("gpu[a-b]"), Catch::Contains("not a number"));
  CHECK_THROWS_WITH(expand_nodelist("gpu[5-2]"), Catch::Contains("empty"));
  CHECK_THROWS_AS(expand_nodelist(""), Error);
}
