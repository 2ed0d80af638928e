// CRC-32C: the published check value, and the instruction path equal to the table for every length
// and alignment (the shards' checksums and TensorBoard's framing rely on both giving the same).
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "cvtrain/core/crc32c.h"

using namespace cvtrain;

TEST_CASE("CRC-32C gives the Castagnoli check value, by instruction and by table alike", "[core]") {
  CHECK(crc32c("123456789", 9) == 0xE3069283u);
  CHECK(crc32c_portable("123456789", 9) == 0xE3069283u);
  CHECK(crc32c("", 0) == 0);
  std::vector<uint8_t> bytes(300);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 131 + 7);
  for (size_t offset = 0; offset < 9; ++offset)
    for (size_t size = 0; size + offset <= bytes.size(); size += 7) {
      INFO("offset " << offset << " size " << size);
      CHECK(crc32c(bytes.data() + offset, size) == crc32c_portable(bytes.data() + offset, size));
    }
  const uint32_t before = crc32c(bytes.data(), bytes.size());
  bytes[123] ^= 0x10;  // one flipped bit
  CHECK(crc32c(bytes.data(), bytes.size()) != before);
}
