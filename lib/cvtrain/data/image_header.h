// An image's size read from its header without decoding it (PNG, BMP, WebP, PPM/PGM; JPEG has
// jpeg_size): what data.max_image_pixels is checked against before a decode allocates the pixels.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cvtrain/data/dataset.h"

namespace cvtrain {

// nullopt for other formats (TIFF, anything unknown) and for a header too short to hold the size.
std::optional<ImageSize> image_header_size(const std::vector<uint8_t>& bytes);

// How many bytes the header says the whole file holds (BMP's file header, WebP's RIFF size,
// binary netpbm's size and sample depth); nullopt for other formats and where the header does not
// say. A file shorter than this was cut short.
std::optional<uint64_t> declared_file_bytes(const std::vector<uint8_t>& bytes);

// The format its first bytes name: "JPEG", "PNG", "BMP", "WebP", "TIFF", "PNM", or "" for anything else.
const char* image_format_name(const std::vector<uint8_t>& bytes);

// What a file that is no image cvtrain reads holds, from its first bytes, for the message that
// names it: a Git LFS pointer (a clone without `git lfs pull`), an HTML page (a download that got
// an error or login page), GIF, HEIC/AVIF, SVG, PDF, an archive, plain text, or its first bytes in hex.
std::string describe_non_image(const std::vector<uint8_t>& bytes);

}  // namespace cvtrain
