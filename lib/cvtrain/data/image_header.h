// An image's size read from its header without decoding it (PNG, BMP, WebP, PPM/PGM; JPEG has
// jpeg_size): what data.max_image_pixels is checked against before a decode allocates the pixels.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "cvtrain/data/dataset.h"

namespace cvtrain {

// nullopt for other formats (TIFF, anything unknown) and for a header too short to hold the size.
std::optional<ImageSize> image_header_size(const std::vector<uint8_t>& bytes);

// The format its first bytes name: "JPEG", "PNG", "BMP", "WebP", "TIFF", "PNM", or "" for anything else.
const char* image_format_name(const std::vector<uint8_t>& bytes);

}  // namespace cvtrain
