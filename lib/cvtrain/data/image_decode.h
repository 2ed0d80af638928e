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

// Throws Error naming `name` when an image of `size` has more than `max_pixels` pixels (0: no
// limit). Checked on a JPEG's header before decoding, as Pillow refuses decompression bombs: a
// few kilobytes can declare a gigapixel image.
void check_image_pixels(ImageSize size, int64_t max_pixels, const std::string& name);

// The smallest factor at which the `crop` region of a `full`-size image still covers `out` pixels
// in both directions (so the final resize only ever shrinks or keeps).
JpegScale jpeg_scale_covering(ImageSize full, ImageSize crop, ImageSize out);
// The smallest of 1/8, 1/4 and 1/2 at which the whole image still covers `out`, else 1: the
// center view is Pillow's resize of the full decode exactly unless the JPEG is at least twice
// the resize, when a power-of-two DCT scale (a clean average of pixel blocks) saves the most.
JpegScale jpeg_scale_halving(ImageSize full, ImageSize out);

// Chroma (in 4:2:0 and 4:2:2 files) upsampled by repeating it (`replicated`: faster, and rows and
// columns decode independently, so a window has exactly the full decode's pixels) or by libjpeg's
// "fancy" interpolation (`smooth`: what Pillow decodes, for views that must equal torchvision's).
enum class JpegChroma { replicated, smooth };

// Decodes the part of a JPEG that covers `region` (full-size coordinates) at `scale`: rows above
// it are skipped without colour conversion, rows below it not decoded at all, columns outside
// it (rounded to whole blocks) not transformed. The pixels equal those of a full decode at the
// same scale (with `smooth` chroma: of the region, widened by 16 pixels first). A file that ends
// before the last row needed is an error; damage below the region goes unnoticed, so whether a
// truncated file is usable depends only on (file, region).
ImageWindow decode_jpeg_window(const std::vector<uint8_t>& bytes, const std::string& name, JpegScale scale, PixelRect region,
                               JpegChroma chroma);

// Decodes a whole image to RGB (grayscale and CMYK JPEGs converted; alpha dropped; 16-bit reduced
// to 8). JPEGs are decoded at `scale` with `chroma`; other formats always at full size. Throws Error
// naming `name` for empty, truncated, corrupt or unsupported data. Which scale and chroma a view of
// an image takes is image_views.h's to say (decode_view).
Image decode_image(const std::vector<uint8_t>& bytes, const std::string& name, JpegScale scale, JpegChroma chroma);

}  // namespace cvtrain
