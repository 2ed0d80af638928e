// Writing 8-bit images as PNG files (zlib's deflate, no imaging library): the preview grid and
// other pictures people look at.
#pragma once

#include <cstdint>
#include <string>

namespace cvtrain {

// `pixels`: height rows of width x channels bytes (1: gray, 3: RGB, 4: RGBA). Written atomically;
// throws Error when the file cannot be written.
void write_png(const std::string& path, const uint8_t* pixels, int width, int height, int channels);

}  // namespace cvtrain
