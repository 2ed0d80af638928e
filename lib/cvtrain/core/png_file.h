// Writing 8-bit images as PNG files (zlib's deflate, no imaging library): the preview grid and
// other pictures people look at.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace cvtrain {

// `pixels`: height rows of width x channels bytes (1: gray, 3: RGB, 4: RGBA). Written atomically;
// throws Error when the file cannot be written.
void write_png(const std::string& path, const uint8_t* pixels, int width, int height, int channels);

// An 8-bit palette PNG (label masks as VOC stores them): `indices` height rows of width bytes,
// each one a colour of `palette` (1 to 256 colours). Written atomically.
void write_palette_png(const std::string& path, const uint8_t* indices, int width, int height,
                       const std::vector<std::array<uint8_t, 3>>& palette);

}  // namespace cvtrain
