// PNG decoded through libpng's own API, its messages kept for cvtrain's error instead of printed:
// libpng's default handlers write to stderr (into the middle of a progress line) while OpenCV only
// learns that the file would not decode.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cvtrain/data/dataset.h"

namespace cvtrain {

bool is_png(const std::vector<uint8_t>& bytes);

// 8-bit RGB, as OpenCV's imdecode(IMREAD_COLOR) gives it (then turned RGB): 16-bit samples cut to
// their high byte, alpha and tRNS dropped, palettes and gray (expanded to 8 bits) made RGB, no gamma
// applied. A file libpng refuses is an Error naming `name` and what libpng said.
Image decode_png(const std::vector<uint8_t>& bytes, const std::string& name);

}  // namespace cvtrain
