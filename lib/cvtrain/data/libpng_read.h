// libpng's read frame as cvtrain uses it: errors longjmp back to a frame that holds no C++ objects,
// their message (and libpng's first warning) kept for cvtrain's error instead of printed to stderr.
// Internal to data/'s libpng users (png_decode.cpp for images, label_mask.cpp for masks).
#pragma once

#include <png.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cvtrain::libpng {

struct Read {
  const std::vector<uint8_t>* bytes = nullptr;
  size_t at = 0;
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;  // the rows as the transforms asked for leave them, one after another
  std::vector<png_bytep> rows;
  std::string error;    // what stopped libpng
  std::string warning;  // the first thing it warned of (an iCCP profile, a CRC of an ancillary chunk)
};

// Reads `read.bytes`: after png_read_info, `ask(png, info, context)` asks for its transforms and
// calls png_read_update_info; then every row is read into read.pixels. False (and read.error)
// where libpng gave up.
using AskForTransforms = void (*)(png_structp png, png_infop info, void* context);
bool run(Read& read, AskForTransforms ask, void* context);

}  // namespace cvtrain::libpng
