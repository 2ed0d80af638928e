// Pixel operations of the automatic augmentations on uint8 HWC images, computed as Pillow computes
// them (ImageOps, ImageEnhance, Image.transform, GaussianBlur), so that cvtrain's RandAugment
// equals timm's: the colour ops bit for bit, the geometric ones up to Pillow's rounding of the
// rotation matrix. Torch-free; every op works in place.
#pragma once

#include <cstdint>
#include <vector>

namespace cvtrain {

// A sample's pixels, owned elsewhere (a slot of the batch being filled).
struct PixelView {
  uint8_t* data = nullptr;
  int width = 0, height = 0, channels = 0;
  int64_t size() const { return static_cast<int64_t>(width) * height * channels; }
};

enum class Resample { kBilinear, kBicubic, kNearest };

// ImageOps: per-channel look-up tables.
void auto_contrast(PixelView image);
void equalize(PixelView image);
void invert(PixelView image);
void posterize(PixelView image, int bits_kept);               // bits in [0, 8]
void solarize(PixelView image, int threshold);                // values >= threshold are inverted
void solarize_add(PixelView image, int add, int threshold);   // values < threshold gain `add`, up to 255

// ImageEnhance: a blend of the image with a degenerate version of itself; 1 keeps the image.
void enhance_color(PixelView image, double factor);      // degenerate: the image in grayscale
void enhance_contrast(PixelView image, double factor);   // degenerate: its mean gray level
void enhance_brightness(PixelView image, double factor); // degenerate: black
void enhance_sharpness(PixelView image, double factor);  // degenerate: ImageFilter.SMOOTH of it

// Image.transform(AFFINE): output pixel (x, y) samples the input at matrix * (x + 0.5, y + 0.5, 1);
// pixels that map outside the input take `fill` (one value per channel). Nearest takes Pillow's
// three paths: pure scaling, 16.16 fixed point, and floating point beyond the fixed range.
// `vector_kernels` false keeps to the portable loops (which the vector ones equal byte for byte).
void affine_transform(PixelView image, const double matrix[6], Resample resample, const uint8_t* fill, bool vector_kernels = true);
// Image.rotate(degrees) about the centre, counter-clockwise, without expanding the canvas; 180
// degrees (and 90 or 270 on a square) are Pillow's exact transposes.
void rotate(PixelView image, double degrees, Resample resample, const uint8_t* fill);

// Image.convert("L"): one gray level per pixel, ITU-R 601-2 luma of RGB in Pillow's 16-bit fixed
// point; a gray image's own first channel.
std::vector<uint8_t> gray_levels(PixelView image);

// ImageFilter.GaussianBlur(radius): three extended box blurs per direction.
void gaussian_blur(PixelView image, double radius);

}  // namespace cvtrain
