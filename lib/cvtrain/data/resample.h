// Pillow's antialiased resize (Image.resize(..., BILINEAR or BICUBIC), what torchvision's Resize and
// timm's RandomResizedCropAndInterpolation do to PIL images), bit for bit, computed only for the
// crop of the resized image that is kept.
#pragma once

#include <cstdint>
#include <vector>

#include "cvtrain/data/dataset.h"

namespace cvtrain {

// Pillow's filters: bilinear (the triangle, support 1) and bicubic (Keys' cubic with a = -0.5,
// support 2, whose negative lobes can overshoot; the sums are clipped to 0..255).
enum class ResizeFilter { kBilinear, kBicubic };

// Pillow's fixed-point weights: 32 bits less 8 for a pixel and 2 of headroom for the sums.
constexpr int kResamplePrecisionBits = 32 - 8 - 2;

// One axis: for each kept output pixel, the source pixels it weighs and Pillow's fixed-point weights.
struct ResampleAxis {
  std::vector<int> first, count;  // per kept output pixel
  std::vector<int32_t> weights;   // taps per output pixel, zero-padded
  int taps = 0;
  int source_size = 0, resized_size = 0;  // the whole resize, of which the kept pixels are a part
  int source_begin() const;  // the source range all kept pixels read
  int source_end() const;
};

// Output pixels [keep_from, keep_from + keep) of resizing `source_size` pixels to `resized_size`.
ResampleAxis resample_axis(ResizeFilter filter, int source_size, int resized_size, int keep_from, int keep);

// Resamples `window` (a part of the source whose top-left pixel is (window_x, window_y) in source
// coordinates) into `out`: x.count.size() columns by y.count.size() rows, HWC, with the window's
// channels (1 or 3; others are an Error). Two passes, each rounded to 8 bits, in Pillow 13's order:
// vertical first where the height shrinks by more than twice as many pixels as the width, else
// horizontal first (the order changes the rounding, so a pixel or two by a level).
// The AVX2 kernels where the CPU has them (kFastest), else portable loops; the bytes are the same.
enum class ResampleKernels { kFastest, kPortable };
void resample(const Image& window, int window_x, int window_y, const ResampleAxis& x, const ResampleAxis& y, uint8_t* out,
              ResampleKernels kernels = ResampleKernels::kFastest);

}  // namespace cvtrain
