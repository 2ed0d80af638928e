// Pillow's antialiased bilinear resize (Image.resize(..., BILINEAR), what torchvision's Resize does
// to PIL images), bit for bit, computed only for the crop of the resized image that is kept.
#pragma once

#include <cstdint>
#include <vector>

#include "cvtrain/data/dataset.h"

namespace cvtrain {

// One axis: for each kept output pixel, the source pixels it weighs and Pillow's fixed-point weights.
struct ResampleAxis {
  std::vector<int> first, count;  // per kept output pixel
  std::vector<int32_t> weights;   // taps per output pixel, zero-padded
  int taps = 0;
  int source_begin() const;  // the source range all kept pixels read
  int source_end() const;
};

// Output pixels [keep_from, keep_from + keep) of resizing `source_size` pixels to `resized_size`.
ResampleAxis bilinear_axis(int source_size, int resized_size, int keep_from, int keep);

// Resamples `window` (a part of the source whose top-left pixel is (window_x, window_y) in source
// coordinates) into `out`: x.count.size() columns by y.count.size() rows, HWC, with the window's
// channels (1 or 3; others are an Error).
// Horizontal pass first, rounded to 8 bits, then vertical, as Pillow does.
void resample(const Image& window, int window_x, int window_y, const ResampleAxis& x, const ResampleAxis& y, uint8_t* out);

}  // namespace cvtrain
