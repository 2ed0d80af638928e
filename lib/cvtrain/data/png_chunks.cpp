// png_damage: eight signature bytes, then chunks of a 4-byte big-endian length, a 4-byte type, the
// data and a CRC-32 over type and data, up to IEND (the PNG specification, section 5).
#include "cvtrain/data/png_chunks.h"

#include <fmt/format.h>
#include <zlib.h>

#include <cstring>

#include "cvtrain/data/png_decode.h"

namespace cvtrain {
namespace {

constexpr size_t kSignatureBytes = 8;  // is_png's (png_decode.h)
constexpr uint32_t kMaxChunkLength = 0x7fffffffu;  // the specification's limit

uint32_t big_endian(const uint8_t* p) { return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3]; }

// A chunk type's first letter is upper case for a critical chunk, which a decoder cannot skip.
bool critical(const std::string& type) { return !type.empty() && type[0] >= 'A' && type[0] <= 'Z'; }

}  // namespace

std::optional<std::string> png_damage(const std::vector<uint8_t>& bytes) {
  if (!is_png(bytes)) return std::nullopt;
  size_t at = kSignatureBytes;
  std::string last = "the signature";
  while (at < bytes.size()) {
    const size_t left = bytes.size() - at;
    if (left < 8) return fmt::format("truncated PNG (the data ends at byte {} inside a chunk's header, after {})", bytes.size(), last);
    const uint32_t length = big_endian(&bytes[at]);
    const std::string type(reinterpret_cast<const char*>(&bytes[at + 4]), 4);
    if (length > kMaxChunkLength) return fmt::format("damaged PNG (chunk '{}' at byte {} claims {} bytes)", type, at, length);
    if (left < 12 + size_t{length})
      return fmt::format("truncated PNG (the data ends at byte {}, inside chunk {} that starts at byte {} and needs {} more)", bytes.size(),
                         type, at, 12 + size_t{length} - left);
    const uint32_t stored = big_endian(&bytes[at + 8 + length]);
    const auto computed = static_cast<uint32_t>(crc32(0L, &bytes[at + 4], 4 + length));
    if (critical(type) && stored != computed) return fmt::format("damaged PNG (chunk {} at byte {} fails its CRC-32)", type, at);
    if (type == "IEND") return std::nullopt;
    last = "chunk " + type;
    at += 12 + size_t{length};
  }
  return std::nullopt;
}

}  // namespace cvtrain
