// Which pixels each view of an image sees, decided here for every task: a new task's views inherit
// a choice instead of a decoder default (docs/data.md, docs/segmentation.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cvtrain/data/image_decode.h"

namespace cvtrain {

enum class ImageView {
  // Evaluation and prediction of every task, segmentation's training (mmseg's loaders decode with
  // Pillow or OpenCV, both so) and what `data inspect` and `preview` read: Pillow's decode, full
  // size with smoothed chroma, the pixels published numbers are measured on.
  exact,
  // Classification's random crop in training: the smallest DCT scale that covers the crop, chroma
  // repeated (faster; a mean 4.3 levels of 255 from timm's crop on JPEGs, docs/data.md).
  classification_crop,
  // Classification's centre view (evaluation, and training without the random crop): Pillow's
  // chroma; a JPEG at least twice the resize first at 1/2, 1/4 or 1/8 scale (docs/data.md).
  classification_center,
};

// Whether a JPEG is decoded at a reduced DCT scale first, and which.
enum class DctScaling { none, covering_crop, halving };

struct ViewDecode {
  JpegChroma chroma;
  DctScaling scaling;
};

ViewDecode view_decode(ImageView view);

// The DCT scale a view's JPEG window decodes at, where `region` of a `full`-size image becomes `out`
// pixels (covering_crop: the crop's output; halving: the whole image's resize).
JpegScale view_jpeg_scale(DctScaling scaling, ImageSize full, ImageSize region, ImageSize out);

// The whole image as `view` sees it at full size (DCT scaling is for the crop pipeline's windows).
// Throws Error naming `name` as decode_image does.
Image decode_view(const std::vector<uint8_t>& bytes, const std::string& name, ImageView view);

}  // namespace cvtrain
