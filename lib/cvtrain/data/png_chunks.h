// A PNG's chunks walked without decoding (length, type, data and CRC-32 of each), so that a
// truncated or corrupted file is named for what it is (where, which chunk) before libpng meets it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cvtrain {

// Why the PNG in `bytes` cannot decode: it ends inside a chunk ("truncated PNG ..."), or a
// critical chunk (IHDR, PLTE, IDAT, IEND) fails its CRC-32 ("damaged PNG ..."), or a chunk claims
// an impossible length. nullopt for an intact PNG, and for bytes that are no PNG at all. As
// Pillow, a file whose last chunk is whole but that lacks IEND is left to the decoder.
std::optional<std::string> png_damage(const std::vector<uint8_t>& bytes);

}  // namespace cvtrain
