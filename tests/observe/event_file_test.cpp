// TensorBoard event files: CRC-32C masked as TFRecord masks it, and the TFRecord framing
// of a written file read back by hand (TensorBoard's own reader is the e2e test's).
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>

#include "cvtrain/observe/event_file.h"
#include "cvtrain/observe/metrics_log.h"
#include "temp_dir.h"

using namespace cvtrain;
using cvtrain::testing::read_text;
using cvtrain::testing::TempDir;

TEST_CASE("CRC-32C is masked as TFRecord stores it", "[observe]") {
  const uint32_t crc = 0xE3069283u;
  CHECK(masked_crc32c("123456789", 9) == ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

TEST_CASE("an event file is a chain of framed records whose checksums hold", "[observe]") {
  TempDir dir;
  std::string path;
  {
    EventFile events(dir.path().string());
    events.write_scalars(7, 1.5, {{"train/loss", 0.25}, {"train/lr", 0.1}});
    path = events.path();
  }
  CHECK(std::filesystem::path(path).filename().string().rfind("events.out.tfevents.", 0) == 0);
  const std::string bytes = read_text(path);
  std::vector<std::string> payloads;
  for (size_t at = 0; at < bytes.size();) {
    REQUIRE(at + 12 <= bytes.size());
    uint64_t length = 0;
    uint32_t length_crc = 0, payload_crc = 0;
    std::memcpy(&length, bytes.data() + at, 8);
    std::memcpy(&length_crc, bytes.data() + at + 8, 4);
    CHECK(length_crc == masked_crc32c(bytes.data() + at, 8));
    REQUIRE(at + 16 + length <= bytes.size());
    payloads.push_back(bytes.substr(at + 12, length));
    std::memcpy(&payload_crc, bytes.data() + at + 12 + length, 4);
    CHECK(payload_crc == masked_crc32c(payloads.back().data(), length));
    at += 16 + length;
  }
  REQUIRE(payloads.size() == 2);
  CHECK(payloads[0].find("brain.Event:2") != std::string::npos);
  CHECK(payloads[1] == event_bytes(1.5, 7, "", {{"train/loss", 0.25}, {"train/lr", 0.1}}));
  // Event: wall_time (field 1, fixed64), step (field 2, varint 7), summary (field 5).
  CHECK(payloads[1].substr(0, 1) == "\x09");
  CHECK(payloads[1].substr(9, 2) == std::string("\x10\x07", 2));
}

TEST_CASE("a record's numbers become scalars tagged by its kind, strings and the step left out", "[observe]") {
  const MetricRecord record{{"kind", std::string("epoch")}, {"epoch", int64_t{2}}, {"step", int64_t{10}},
                            {"top1", 0.5}, {"peak_memory_mb_per_rank", std::string("1.0 2.0")}};
  const auto scalars = scalars_of(record);
  REQUIRE(scalars.size() == 2);
  CHECK(scalars[0] == std::pair<std::string, double>{"epoch/epoch", 2});
  CHECK(scalars[1] == std::pair<std::string, double>{"epoch/top1", 0.5});
}
