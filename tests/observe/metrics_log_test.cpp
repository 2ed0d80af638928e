// metrics.jsonl lines: valid JSON values, escaping, appending.
#include <catch2/catch.hpp>

#include <cmath>

#include "cvtrain/observe/metrics_log.h"
#include "temp_dir.h"

using namespace cvtrain;

TEST_CASE("records become one JSON object per line", "[observe]") {
  CHECK(to_json({{"kind", std::string("epoch")}, {"step", int64_t{12}}, {"top1", 0.925}}) ==
        R"({"kind": "epoch", "step": 12, "top1": 0.925})");
  CHECK(to_json({{"note", std::string("a \"quoted\"\\path\n")}}) == R"({"note": "a \"quoted\"\\path\u000a"})");
  CHECK(to_json({{"loss", std::nan("")}}) == R"({"loss": null})");
}

TEST_CASE("MetricsLog appends and flushes every line", "[observe]") {
  cvtrain::testing::TempDir dir;
  {
    MetricsLog log(dir.file("m.jsonl"));
    log.write({{"step", int64_t{1}}});
    CHECK(cvtrain::testing::read_text(dir.file("m.jsonl")) == "{\"step\": 1}\n");
    log.write({{"step", int64_t{2}}});
  }
  CHECK(cvtrain::testing::read_text(dir.file("m.jsonl")) == "{\"step\": 1}\n{\"step\": 2}\n");
  CHECK_THROWS_WITH(MetricsLog(dir.file("no/such/dir/m.jsonl")), Catch::Contains("cannot open for writing"));
}
