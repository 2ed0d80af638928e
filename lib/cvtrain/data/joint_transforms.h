// The joint transforms of segmentation training, mmsegmentation's standard pipeline: random resize
// by a ratio range, random crop (cat_max_ratio), flip, photometric distortion (the image only) and
// padding to the crop size. Image and mask go through the same geometry, the mask by nearest
// neighbour; every decision is a pure function of the sample's key and its data.
#pragma once

#include <cstdint>

#include "cvtrain/data/dataset.h"
#include "cvtrain/data/label_mask.h"

namespace cvtrain {

struct JointAugment {
  int scale_long = 0, scale_short = 0;      // RandomResize's scale, (2048, 512): the image fitted within
                                            // long x short times the ratio, aspect kept; 0: no resize
  double ratio_min = 1.0, ratio_max = 1.0;  // the ratio, uniform in [min, max]
  int crop_height = 0, crop_width = 0;      // RandomCrop's size; the output is always this size
  double cat_max_ratio = 1.0;               // crops where one class holds more of the labelled pixels are drawn
                                            // again (up to 10 times); 1: the first crop is kept
  double hflip = 0;                         // chance of a left-right mirror
  bool photometric = false;                 // PhotoMetricDistortion on the image
  int ignore_index = 255;                   // the mask's padding; unlabelled pixels count for no class
  Colour pad_colour{0, 0, 0};               // the image's padding (the normalisation mean: mmseg pads with 0
                                            // after normalising)
};

// mmseg's PhotoMetricDistortion: each part applied with chance 1/2, contrast before or after the HSV parts.
struct PhotometricPlan {
  bool brightness = false, contrast = false, saturation = false, hue = false;
  bool contrast_first = false;
  float brightness_delta = 0;  // added, in [-32, 32)
  float contrast_alpha = 1;    // multiplied, in [0.5, 1.5)
  float saturation_alpha = 1;  // S multiplied, in [0.5, 1.5)
  int hue_delta = 0;           // added to OpenCV's H (0..179, modulo 180), in [-18, 17]
};

// What was decided for one sample.
struct JointPlan {
  ImageSize resized;   // the image's size after the random resize
  PixelRect crop;      // the part of the resized image kept (at most the crop size; the rest is padding)
  int crop_draws = 1;  // crops drawn for cat_max_ratio
  bool flip = false;
  PhotometricPlan photometric;
};

struct AugmentedPair {
  Image image;     // crop_height x crop_width x 3
  LabelMask mask;  // crop_height x crop_width
  JointPlan plan;
};

// One training sample: `image` (RGB) and its `mask` of the same size, augmented with the decisions
// of `key` (core/rng.h's sample_key). Bilinear resize as Pillow's (antialiased when shrinking),
// computed for the kept crop only; the mask's nearest neighbour is Pillow's (pixel centres aligned).
AugmentedPair augment_pair(const JointAugment& augment, const Image& image, const LabelMask& mask, uint64_t key);

// The photometric distortion alone, in place on RGB pixels (width x height x 3).
void apply_photometric(const PhotometricPlan& plan, uint8_t* rgb, int width, int height);

// The image's size after mmcv's imrescale to fit (long, short) scaled by `ratio`.
ImageSize rescaled_size(ImageSize source, int scale_long, int scale_short, double ratio);

}  // namespace cvtrain
