// failures.jsonl: lines appended by ranks and the launcher read back in order, a cut line left out,
// and recording never throws.
#include <catch2/catch.hpp>

#include "cvtrain/core/failure_log.h"
#include "temp_dir.h"

using namespace cvtrain;
using cvtrain::testing::TempDir;

TEST_CASE("failures are appended one line each, read back oldest first, a cut line left out", "[core]") {
  TempDir dir;
  dir.write("run/metrics.jsonl", "");
  CHECK(read_failures(dir.file("run")).empty());
  record_failure(dir.file("run"), "rank 1", "data.train: 2 of 120 samples could not be read\n  bad/b/6.jpg: corrupt JPEG");
  record_failure(dir.file("run"), "launcher", "rank 0 was killed by signal 9 (Killed); the other ranks were stopped");
  const std::vector<FailureRecord> read = read_failures(dir.file("run"));
  REQUIRE(read.size() == 2);
  CHECK(read[0].who == "rank 1");
  CHECK(read[0].message == "data.train: 2 of 120 samples could not be read\n  bad/b/6.jpg: corrupt JPEG");
  CHECK(read[1].who == "launcher");
  CHECK_FALSE(read[1].host.empty());
  CHECK(read[1].time.size() == 20);  // 2026-12-02T08:02:20Z
  CHECK(read[0].time <= read[1].time);
  dir.write("run/failures.jsonl", cvtrain::testing::read_text(dir.file("run/failures.jsonl")) + "{\"who\": \"rank 3\", \"mess");
  CHECK(read_failures(dir.file("run")).size() == 2);
  // A folder that is gone: nothing recorded, nothing thrown (the failure being reported stays the one seen).
  CHECK_NOTHROW(record_failure(dir.file("gone/deeper"), "rank 0", "x"));
}
