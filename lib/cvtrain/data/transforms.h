// Per-sample augmentation on uint8 HWC images (crop, flip, then augment.auto_augment's ops): the training augmentation is a pure function
// of (seed, epoch, sample index); evaluation is torchvision's Resize(floor(size / crop_fraction)) + CenterCrop(size) on PIL images, pixel
// for pixel (timm's eval transform, bilinear or bicubic). The crop is planned on the source size before decoding, so JPEGs can be decoded
// at a reduced DCT scale (and only the rows and columns the sample needs).
#pragma once

#include <cstdint>
#include <vector>

#include "cvtrain/data/dataset.h"
#include "cvtrain/data/resample.h"

namespace cvtrain {

struct AugmentSpec;
enum class AugmentInterpolation;

struct SampleTransform {
  const AugmentSpec* augment = nullptr;  // null: evaluation transform
  int64_t image_size = 0;
  uint64_t seed = 0;
  int64_t epoch = 0;
  int64_t max_image_pixels = kDefaultMaxImagePixels;  // data.max_image_pixels (Pillow's default); 0 = no limit
  double crop_fraction = 0.875;         // the centre view's image_size / resized shorter side (data.eval_crop_fraction)
  std::vector<uint8_t> augment_fill;    // where rotate, shear and translate leave no pixel (augment_fill(data.mean)); empty: gray
  ResizeFilter eval_filter = ResizeFilter::kBilinear;  // the evaluation view's resize (data.eval_interpolation)
};

// Every random decision for one sample, in source-image coordinates.
struct CropPlan {
  int x = 0, y = 0, width = 0, height = 0;  // region of the source the sample is made from
  // The center view: the whole source resized to resized_width x resized_height, of which the
  // image_size^2 square at (keep_x, keep_y) is kept. 0: the region is resized to image_size^2.
  int resized_width = 0, resized_height = 0, keep_x = 0, keep_y = 0;
  int pad_dx = -1, pad_dy = -1;  // random_crop_padding offsets; -1: not padded
  bool flip = false;             // left-right
  bool vflip = false;            // top-bottom
  // The resize: bilinear (for a random resized crop OpenCV's, area-averaged from a 2x shrink on) or
  // Pillow's bicubic; the centre view resizes as Pillow with either.
  ResizeFilter filter = ResizeFilter::kBilinear;
  uint64_t augment_key = 0;  // the stream augment.auto_augment draws its ops from
};

CropPlan plan_sample(ImageSize source, const SampleTransform& transform, size_t index);

// The filter a recipe's bilinear or bicubic names (data.eval_interpolation); random is drawn per
// sample by plan_sample and is an Error here.
ResizeFilter resize_filter(AugmentInterpolation interpolation);

// Applies `plan` to `decoded` (the part of the source image the plan needs, possibly decoded at a
// reduced scale), writing the image_size x image_size result (HWC, the input's channels) to `out`.
void render_sample(const ImageWindow& decoded, ImageSize source, const CropPlan& plan, const SampleTransform& transform,
                   uint8_t* out);

// plan_sample + render_sample on a full-size image.
Image transform_sample(const Image& input, const SampleTransform& transform, size_t index);

}  // namespace cvtrain
