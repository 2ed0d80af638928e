// Encoded image -> 8-bit RGB: JPEG through libjpeg-turbo with DCT-domain downscaling and only the
// rows and columns a crop needs (a 224-pixel crop never pays for a full-size decode), other
// formats through OpenCV.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cvtrain/data/dataset.h"

namespace cvtrain {

// A libjpeg-turbo scaling factor num/den between 1/8 and 1; decoding costs about its square.
struct JpegScale {
  int num = 1;
  int den = 1;
};

// The size a JPEG declares in its header; nullopt when `bytes` is not a JPEG. Throws Error naming
// `name` for a JPEG whose header cannot be read.
std::optional<ImageSize> jpeg_size(const std::vector<uint8_t>& bytes, const std::string& name);

// The smallest factor at which the `crop` region of a `full`-size image still covers `out` pixels
// in both directions (so the final resize only ever shrinks or keeps).
JpegScale jpeg_scale_covering(ImageSize full, ImageSize crop, ImageSize out);

// Decodes the part of a JPEG that covers `region` (full-size coordinates) at `scale`: rows above
// it are skipped without colour conversion, rows below it not decoded at all, columns outside
// it (rounded to whole blocks) not transformed. The pixels equal those of a full decode at the
// same scale. A file that ends before the last row needed is an error; damage below the region
// goes unnoticed, so whether a truncated file is usable depends only on (file, region).
ImageWindow decode_jpeg_window(const std::vector<uint8_t>& bytes, const std::string& name, JpegScale scale, PixelRect region);

// Decodes a whole image to RGB (grayscale and CMYK JPEGs converted; alpha dropped; 16-bit reduced
// to 8). JPEGs are decoded at `scale`; other formats always at full size. Throws Error naming
// `name` for empty, truncated, corrupt or unsupported data.
Image decode_image(const std::vector<uint8_t>& bytes, const std::string& name, JpegScale scale = {});

}  // namespace cvtrain
