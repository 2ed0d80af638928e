// Pillow's arithmetic, step for step: float blends truncated to uint8, float 3x3 kernels with a
// +0.5 bias, double-precision affine sampling, fixed-point box blurs. The x86-64 baseline has no
// FMA, so the compiler cannot fuse these products into results Pillow would not compute; the AVX2
// bilinear sampler (chosen at run time) has no FMA either and rounds each operation as the scalar one.
#include "cvtrain/data/image_ops.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "cvtrain/core/cpu_features.h"

namespace cvtrain {
namespace {

using Lut = std::array<uint8_t, 256>;
using Histogram = std::array<int64_t, 256>;

void apply_luts(PixelView image, const std::vector<Lut>& luts) {
  const int c = image.channels;
  for (int64_t p = 0; p < image.size(); p += c)
    for (int ch = 0; ch < c; ++ch) image.data[p + ch] = luts[static_cast<size_t>(ch)][image.data[p + ch]];
}

void apply_lut(PixelView image, const Lut& lut) {
  for (int64_t i = 0; i < image.size(); ++i) image.data[i] = lut[image.data[i]];
}

Histogram channel_histogram(PixelView image, int channel) {
  Histogram h{};
  for (int64_t i = channel; i < image.size(); i += image.channels) ++h[image.data[i]];
  return h;
}

Lut identity_lut() {
  Lut lut{};
  for (int i = 0; i < 256; ++i) lut[static_cast<size_t>(i)] = static_cast<uint8_t>(i);
  return lut;
}

// ImageOps.autocontrast without cutoff: the channel's [lowest, highest] stretched to [0, 255].
Lut auto_contrast_lut(const Histogram& h) {
  int lo = 0, hi = 255;
  while (lo < 256 && h[static_cast<size_t>(lo)] == 0) ++lo;
  while (hi >= 0 && h[static_cast<size_t>(hi)] == 0) --hi;
  if (lo == 256) lo = 255;  // an empty histogram: Python's loop variable ends at 255
  if (hi < 0) hi = 0;
  if (hi <= lo) return identity_lut();
  const double scale = 255.0 / (hi - lo), offset = -lo * scale;
  Lut lut{};
  for (int i = 0; i < 256; ++i) lut[static_cast<size_t>(i)] = static_cast<uint8_t>(std::clamp(static_cast<int>(i * scale + offset), 0, 255));
  return lut;
}

// ImageOps.equalize: the cumulative histogram in steps of (pixels - last bin) / 255.
Lut equalize_lut(const Histogram& h) {
  int64_t total = 0, last = 0, used_bins = 0;
  for (int64_t count : h)
    if (count) {
      total += count;
      last = count;
      ++used_bins;
    }
  if (used_bins <= 1) return identity_lut();
  const int64_t step = (total - last) / 255;
  if (step == 0) return identity_lut();
  Lut lut{};
  int64_t n = step / 2;
  for (size_t i = 0; i < 256; ++i) {
    lut[i] = static_cast<uint8_t>(std::min<int64_t>(n / step, 255));
    n += h[i];
  }
  return lut;
}

template <class MakeLut>
void per_channel_lut(PixelView image, MakeLut make) {
  std::vector<Lut> luts;
  for (int c = 0; c < image.channels; ++c) luts.push_back(make(channel_histogram(image, c)));
  apply_luts(image, luts);
}

// ImagingBlend(degenerate, image, alpha) with alpha as a C float, as Pillow passes it.
void blend_from(const std::vector<uint8_t>& degenerate, PixelView image, double factor) {
  const auto alpha = static_cast<float>(factor);
  if (alpha == 1.0f) return;
  const bool interpolating = alpha >= 0 && alpha <= 1.0f;
  for (int64_t i = 0; i < image.size(); ++i) {
    const int a = degenerate[static_cast<size_t>(i)], b = image.data[i];
    const float v = static_cast<float>(a) + alpha * static_cast<float>(b - a);
    image.data[i] = interpolating ? static_cast<uint8_t>(v) : v <= 0.0f ? 0 : v >= 255.0f ? 255 : static_cast<uint8_t>(v);
  }
}

// convert("L"): ITU-R 601-2 luma in 16-bit fixed point.
uint8_t luma(const uint8_t* rgb) { return static_cast<uint8_t>((rgb[0] * 19595 + rgb[1] * 38470 + rgb[2] * 7471 + 0x8000) >> 16); }

// ImageFilter.SMOOTH, (1 1 1 / 1 5 1 / 1 1 1) / 13, each weight a float; the border is copied.
std::vector<uint8_t> smoothed(PixelView image) {
  std::vector<uint8_t> out(image.data, image.data + image.size());
  const int w = image.width, h = image.height, c = image.channels;
  if (w < 3 || h < 3) return out;
  const float side = 1.0f / 13.0f, centre = 5.0f / 13.0f;
  const float k[3][3] = {{side, side, side}, {side, centre, side}, {side, side, side}};
  // Along a row the channels interleave: the neighbours of byte i are i - c and i + c, so one flat
  // loop per row (which the compiler vectorises; same float operations in the same order).
  const int64_t stride = static_cast<int64_t>(w) * c;
  for (int y = 1; y < h - 1; ++y) {
    const uint8_t* rows[3] = {image.data + (y + 1) * stride, image.data + y * stride,
                              image.data + (y - 1) * stride};  // Pillow sums the row below first
    uint8_t* to = out.data() + y * stride;
    for (int64_t i = c; i < stride - c; ++i) {
      float ss = 0.5f;
      for (int row = 0; row < 3; ++row) {
        const uint8_t* r = rows[row];
        ss += static_cast<float>(r[i - c]) * k[row][0] + static_cast<float>(r[i]) * k[row][1] + static_cast<float>(r[i + c]) * k[row][2];
      }
      to[i] = static_cast<uint8_t>(std::clamp(ss, 0.0f, 255.0f));
    }
  }
  return out;
}

int floor_int(double v) { return v < 0.0 ? static_cast<int>(std::floor(v)) : static_cast<int>(v); }
int clip_index(int v, int size) { return v < 0 ? 0 : v < size ? v : size - 1; }

// Pillow's bilinear_filter: the four neighbours of (xin, yin) - 0.5, clamped at the edges, truncated;
// the position worked out once for all of the pixel's channels.
void bilinear_pixel(PixelView in, double xin, double yin, uint8_t* out) {
  xin -= 0.5;
  yin -= 0.5;
  const int x = floor_int(xin), y = floor_int(yin);
  const double dx = xin - x, dy = yin - y;
  const int c = in.channels;
  const int64_t x0 = static_cast<int64_t>(clip_index(x, in.width)) * c, x1 = static_cast<int64_t>(clip_index(x + 1, in.width)) * c;
  const uint8_t* row0 = in.data + static_cast<int64_t>(clip_index(y, in.height)) * in.width * c;
  const bool has_row1 = y + 1 >= 0 && y + 1 < in.height;
  const uint8_t* row1 = has_row1 ? in.data + static_cast<int64_t>(y + 1) * in.width * c : row0;
  for (int ch = 0; ch < c; ++ch) {
    double v1 = row0[x0 + ch] + (row0[x1 + ch] - row0[x0 + ch]) * dx;
    double v2 = v1;
    if (has_row1) v2 = row1[x0 + ch] + (row1[x1 + ch] - row1[x0 + ch]) * dx;
    v1 = v1 + (v2 - v1) * dy;
    out[ch] = static_cast<uint8_t>(v1);
  }
}

// A pixel's four bytes as doubles (the fourth is the next pixel's, and unused).
__attribute__((target("avx2"), always_inline)) inline __m256d pixel_doubles(const uint8_t* p) {
  int32_t bytes;
  std::memcpy(&bytes, p, 4);
  return _mm256_cvtepi32_pd(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(bytes)));
}

// left + (right - left) * dx, per channel.
__attribute__((target("avx2"), always_inline)) inline __m256d across_row(const uint8_t* row, int64_t x0, int64_t x1, __m256d dx) {
  const __m256d left = pixel_doubles(row + x0);
  return _mm256_add_pd(left, _mm256_mul_pd(_mm256_sub_pd(pixel_doubles(row + x1), left), dx));
}

// bilinear_pixel's arithmetic for an RGB pixel's three channels in one vector of doubles (the same
// exact differences, products and sums, each rounded once, so the same bytes). Reads a fourth byte
// after each pixel: `in` must have one to spare.
__attribute__((target("avx2"), always_inline)) inline void bilinear_rgb_avx2(PixelView in, double xin, double yin, uint8_t* out) {
  xin -= 0.5;
  yin -= 0.5;
  const int x = floor_int(xin), y = floor_int(yin);
  const __m256d dx = _mm256_set1_pd(xin - x), dy = _mm256_set1_pd(yin - y);
  const int64_t x0 = static_cast<int64_t>(clip_index(x, in.width)) * 3, x1 = static_cast<int64_t>(clip_index(x + 1, in.width)) * 3;
  const uint8_t* row0 = in.data + static_cast<int64_t>(clip_index(y, in.height)) * in.width * 3;
  const __m256d top = across_row(row0, x0, x1, dx);
  const __m256d bottom =
      y + 1 >= 0 && y + 1 < in.height ? across_row(in.data + static_cast<int64_t>(y + 1) * in.width * 3, x0, x1, dx) : top;
  const __m128i values = _mm256_cvttpd_epi32(_mm256_add_pd(top, _mm256_mul_pd(_mm256_sub_pd(bottom, top), dy)));
  const int32_t packed = _mm_cvtsi128_si32(_mm_packus_epi16(_mm_packs_epi32(values, values), values));
  std::memcpy(out, &packed, 3);
}

double cubic(double v1, double v2, double v3, double v4, double d) {
  const double p1 = v2, p2 = -v1 + v3, p3 = 2 * (v1 - v2) + v3 - v4, p4 = -v1 + v2 - v3 + v4;
  return p1 + d * (p2 + d * (p3 + d * p4));
}

// Pillow's bicubic_filter: 4x4 neighbours, rows past the edge repeat the previous row's value.
void bicubic_pixel(PixelView in, double xin, double yin, uint8_t* out) {
  xin -= 0.5;
  yin -= 0.5;
  int x = floor_int(xin), y = floor_int(yin);
  const double dx = xin - x, dy = yin - y;
  --x;
  --y;
  int cols[4];
  for (int i = 0; i < 4; ++i) cols[i] = clip_index(x + i, in.width);
  for (int channel = 0; channel < in.channels; ++channel) {
    const auto row_value = [&](int row) {
      const auto at = [&](int i) -> double { return in.data[(static_cast<int64_t>(row) * in.width + cols[i]) * in.channels + channel]; };
      return cubic(at(0), at(1), at(2), at(3), dx);
    };
    double v[4];
    v[0] = row_value(clip_index(y, in.height));
    for (int i = 1; i < 4; ++i) v[i] = (y + i >= 0 && y + i < in.height) ? row_value(y + i) : v[i - 1];
    const double value = cubic(v[0], v[1], v[2], v[3], dy);
    out[channel] = value <= 0.0 ? 0 : value >= 255.0 ? 255 : static_cast<uint8_t>(value);
  }
}

// Pillow's COORD: truncation, -1 for anything left of 0.
int coord(double v) { return v < 0.0 ? -1 : static_cast<int>(v); }

void copy_pixel(PixelView in, int x, int y, uint8_t* out) {
  const uint8_t* from = in.data + (static_cast<int64_t>(y) * in.width + x) * in.channels;
  std::copy(from, from + in.channels, out);
}

// ImagingScaleAffine: no rotation or shear, so columns and rows map independently; the positions
// accumulate in floating point as Pillow's loop adds them.
void nearest_scale(PixelView in, PixelView out, const double m[6]) {
  std::vector<int> columns(static_cast<size_t>(out.width), 0);
  int first = out.width, end = 0;
  double xo = m[2] + m[0] * 0.5;
  for (int x = 0; x < out.width; ++x, xo += m[0]) {
    const int xin = coord(xo);
    if (xin >= 0 && xin < in.width) {
      end = x + 1;
      first = std::min(first, x);
      columns[static_cast<size_t>(x)] = xin;
    }
  }
  double yo = m[5] + m[4] * 0.5;
  for (int y = 0; y < out.height; ++y, yo += m[4]) {
    const int yin = coord(yo);
    if (yin < 0 || yin >= in.height) continue;
    for (int x = first; x < end; ++x)
      copy_pixel(in, columns[static_cast<size_t>(x)], yin, out.data + (static_cast<int64_t>(y) * out.width + x) * out.channels);
  }
}

bool fits_fixed_point(const double m[6], int x, int y) {
  return std::fabs(x * m[0] + y * m[1] + m[2]) < 32768.0 && std::fabs(x * m[3] + y * m[4] + m[5]) < 32768.0;
}

// affine_fixed: 16.16 fixed point, rounded once from the matrix, stepped by integer additions.
void nearest_fixed(PixelView in, PixelView out, const double m[6]) {
  const auto fix = [](double v) { return static_cast<int32_t>(std::floor(v * 65536.0 + 0.5)); };
  const int32_t a0 = fix(m[0]), a1 = fix(m[1]), a3 = fix(m[3]), a4 = fix(m[4]);
  int32_t a2 = fix(m[2] + m[0] * 0.5 + m[1] * 0.5), a5 = fix(m[5] + m[3] * 0.5 + m[4] * 0.5);
  for (int y = 0; y < out.height; ++y, a2 += a1, a5 += a4) {
    int32_t xx = a2, yy = a5;
    for (int x = 0; x < out.width; ++x, xx += a0, yy += a3) {
      const int xin = xx >> 16, yin = yy >> 16;  // arithmetic shifts: floor, as Pillow's
      if (xin >= 0 && xin < in.width && yin >= 0 && yin < in.height)
        copy_pixel(in, xin, yin, out.data + (static_cast<int64_t>(y) * out.width + x) * out.channels);
    }
  }
}

// The floating-point loop Pillow keeps for matrices beyond the fixed-point range.
void nearest_float(PixelView in, PixelView out, const double m[6]) {
  double xo = m[2] + m[1] * 0.5 + m[0] * 0.5, yo = m[5] + m[4] * 0.5 + m[3] * 0.5;
  for (int y = 0; y < out.height; ++y, xo += m[1], yo += m[4]) {
    double xx = xo, yy = yo;
    for (int x = 0; x < out.width; ++x, xx += m[0], yy += m[3]) {
      const int xin = coord(xx), yin = coord(yy);
      if (xin >= 0 && xin < in.width && yin >= 0 && yin < in.height)
        copy_pixel(in, xin, yin, out.data + (static_cast<int64_t>(y) * out.width + x) * out.channels);
    }
  }
}

// ImagingTransformAffine with NEAREST, into an image already filled with the fill colour.
void nearest_affine(PixelView in, PixelView out, const double m[6]) {
  if (m[1] == 0 && m[3] == 0) return nearest_scale(in, out, m);
  const int w = out.width, h = out.height;
  if (fits_fixed_point(m, 0, 0) && fits_fixed_point(m, w, h) && fits_fixed_point(m, 0, h) && fits_fixed_point(m, w, 0))
    return nearest_fixed(in, out, m);
  nearest_float(in, out, m);
}

// Image.transpose: ROTATE_90 (counter-clockwise), ROTATE_180 or ROTATE_270, by quarter turns.
void transpose(PixelView image, int quarter_turns) {
  const std::vector<uint8_t> source(image.data, image.data + image.size());
  const PixelView in{const_cast<uint8_t*>(source.data()), image.width, image.height, image.channels};
  const int w = image.width, h = image.height;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const int sx = quarter_turns == 1 ? w - 1 - y : quarter_turns == 2 ? w - 1 - x : y;
      const int sy = quarter_turns == 1 ? x : quarter_turns == 2 ? h - 1 - y : h - 1 - x;
      copy_pixel(in, sx, sy, image.data + (static_cast<int64_t>(y) * w + x) * image.channels);
    }
}

// Python's round(v, 15), as Image.rotate rounds its matrix.
double round15(double v) { return std::nearbyint(v * 1e15) / 1e15; }

// One pass of ImagingLineBoxBlur over `n` values `stride` apart: a box of 2 * radius + 1 with
// fractional end weights, in 24-bit fixed point, the edge pixels repeated beyond the ends.
void box_blur_line(uint8_t* line, int n, int64_t stride, float float_radius, std::vector<uint8_t>& scratch) {
  const int radius = static_cast<int>(float_radius);
  const auto ww = static_cast<uint32_t>(static_cast<float>(1u << 24) / (float_radius * 2 + 1));
  const uint32_t fw = ((1u << 24) - static_cast<uint32_t>(radius * 2 + 1) * ww) / 2;
  const int last = n - 1;
  scratch.resize(static_cast<size_t>(n));
  const auto in = [&](int i) -> uint32_t { return line[static_cast<int64_t>(std::clamp(i, 0, last)) * stride]; };
  uint32_t acc = in(0) * static_cast<uint32_t>(radius + 1);
  for (int x = 0; x < radius; ++x) acc += in(x);  // the window around pixel -1: [-radius - 1, radius - 1]
  for (int x = 0; x <= last; ++x) {
    acc += in(x + radius) - in(x - radius - 1);
    const uint32_t bulk = acc * ww + (in(x - radius - 1) + in(x + radius + 1)) * fw;
    scratch[static_cast<size_t>(x)] = static_cast<uint8_t>((bulk + (1u << 23)) >> 24);
  }
  for (int x = 0; x <= last; ++x) line[static_cast<int64_t>(x) * stride] = scratch[static_cast<size_t>(x)];
}

// _gaussian_blur_radius: the extended box whose `passes` repetitions have the Gaussian's variance.
float box_radius_for(float radius, int passes) {
  const float sigma2 = radius * radius / static_cast<float>(passes);
  const auto length = static_cast<float>(std::sqrt(12.0 * sigma2 + 1.0));
  const auto l = static_cast<float>(std::floor((length - 1.0) / 2.0));
  float a = (2 * l + 1) * (l * (l + 1) - 3 * sigma2);
  a /= 6 * (sigma2 - (l + 1) * (l + 1));
  return l + a;
}

}  // namespace

std::vector<uint8_t> gray_levels(PixelView image) {
  const int64_t pixels = static_cast<int64_t>(image.width) * image.height;
  std::vector<uint8_t> gray(static_cast<size_t>(pixels));
  for (int64_t p = 0; p < pixels; ++p)
    gray[static_cast<size_t>(p)] = image.channels >= 3 ? luma(image.data + p * image.channels) : image.data[p * image.channels];
  return gray;
}

void auto_contrast(PixelView image) { per_channel_lut(image, auto_contrast_lut); }

void equalize(PixelView image) { per_channel_lut(image, equalize_lut); }

void invert(PixelView image) {
  for (int64_t i = 0; i < image.size(); ++i) image.data[i] = static_cast<uint8_t>(255 - image.data[i]);
}

void posterize(PixelView image, int bits_kept) {
  if (bits_kept >= 8) return;
  const int mask = ~((1 << (8 - std::max(bits_kept, 0))) - 1);
  Lut lut{};
  for (int i = 0; i < 256; ++i) lut[static_cast<size_t>(i)] = static_cast<uint8_t>(i & mask);
  apply_lut(image, lut);
}

void solarize(PixelView image, int threshold) {
  Lut lut{};
  for (int i = 0; i < 256; ++i) lut[static_cast<size_t>(i)] = static_cast<uint8_t>(i < threshold ? i : 255 - i);
  apply_lut(image, lut);
}

void solarize_add(PixelView image, int add, int threshold) {
  Lut lut{};
  for (int i = 0; i < 256; ++i) lut[static_cast<size_t>(i)] = static_cast<uint8_t>(i < threshold ? std::min(255, i + add) : i);
  apply_lut(image, lut);
}

void enhance_color(PixelView image, double factor) {
  if (image.channels < 3) return;  // a grayscale image is its own degenerate
  const std::vector<uint8_t> gray = gray_levels(image);
  std::vector<uint8_t> degenerate(static_cast<size_t>(image.size()));
  for (size_t p = 0, i = 0; p < gray.size(); ++p)
    for (int c = 0; c < image.channels; ++c) degenerate[i++] = gray[p];
  blend_from(degenerate, image, factor);
}

void enhance_contrast(PixelView image, double factor) {
  const std::vector<uint8_t> gray = gray_levels(image);
  double sum = 0;
  for (uint8_t g : gray) sum += g;
  const auto mean = static_cast<uint8_t>(static_cast<int>(sum / static_cast<double>(gray.size()) + 0.5));
  blend_from(std::vector<uint8_t>(static_cast<size_t>(image.size()), mean), image, factor);
}

void enhance_brightness(PixelView image, double factor) { blend_from(std::vector<uint8_t>(static_cast<size_t>(image.size()), 0), image, factor); }

void enhance_sharpness(PixelView image, double factor) { blend_from(smoothed(image), image, factor); }

namespace {

// Pillow's affine loop: each output pixel's centre mapped back by `m`, sampled inside the image,
// filled outside.
template <class Sample>
void affine_pixels(PixelView in, PixelView image, const double m[6], const uint8_t* fill, Sample sample) {
  uint8_t* out = image.data;
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < image.width; ++x, out += image.channels) {
      const double xo = x + 0.5, yo = y + 0.5;
      const double xin = m[0] * xo + m[1] * yo + m[2], yin = m[3] * xo + m[4] * yo + m[5];
      const bool inside = xin >= 0.0 && xin < image.width && yin >= 0.0 && yin < image.height;
      if (inside)
        sample(in, xin, yin, out);
      else
        std::copy(fill, fill + image.channels, out);
    }
}

__attribute__((target("avx2"))) void bilinear_affine_rgb_avx2(PixelView in, PixelView image, const double m[6], const uint8_t* fill) {
  uint8_t* out = image.data;
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < image.width; ++x, out += 3) {  // affine_pixels' loop, with the sampler inlined
      const double xo = x + 0.5, yo = y + 0.5;
      const double xin = m[0] * xo + m[1] * yo + m[2], yin = m[3] * xo + m[4] * yo + m[5];
      if (xin >= 0.0 && xin < image.width && yin >= 0.0 && yin < image.height)
        bilinear_rgb_avx2(in, xin, yin, out);
      else
        std::copy(fill, fill + 3, out);
    }
}

}  // namespace

void affine_transform(PixelView image, const double m[6], Resample resample, const uint8_t* fill, bool vector_kernels) {
  std::vector<uint8_t> source(image.data, image.data + image.size());
  source.push_back(0);  // the byte bilinear_rgb_avx2 reads past the last pixel
  const PixelView in{source.data(), image.width, image.height, image.channels};
  if (resample == Resample::kNearest) {
    for (int64_t i = 0; i < image.size(); ++i) image.data[i] = fill[i % image.channels];
    return nearest_affine(in, image, m);
  }
  if (resample == Resample::kBicubic) return affine_pixels(in, image, m, fill, bicubic_pixel);
  if (vector_kernels && image.channels == 3 && cpu_has_avx2()) return bilinear_affine_rgb_avx2(in, image, m, fill);
  affine_pixels(in, image, m, fill, bilinear_pixel);
}

void rotate(PixelView image, double degrees, Resample resample, const uint8_t* fill) {
  degrees = std::fmod(degrees, 360.0);
  if (degrees < 0) degrees += 360.0;
  if (degrees == 0) return;
  if (degrees == 180 || ((degrees == 90 || degrees == 270) && image.width == image.height))
    return transpose(image, static_cast<int>(degrees / 90));
  const double angle = -(degrees * (M_PI / 180.0)),  // -math.radians(degrees)
               cx = image.width / 2.0, cy = image.height / 2.0;
  double m[6] = {round15(std::cos(angle)), round15(std::sin(angle)), 0.0, round15(-std::sin(angle)), round15(std::cos(angle)), 0.0};
  m[2] = m[0] * -cx + m[1] * -cy + m[2] + cx;
  m[5] = m[3] * -cx + m[4] * -cy + m[5] + cy;
  affine_transform(image, m, resample, fill);
}

void gaussian_blur(PixelView image, double radius) {
  if (radius <= 0) return;
  const float box = box_radius_for(static_cast<float>(radius), 3);
  if (box == 0) return;
  std::vector<uint8_t> scratch;
  const int64_t row_stride = static_cast<int64_t>(image.width) * image.channels;
  for (int pass = 0; pass < 3; ++pass)
    for (int y = 0; y < image.height; ++y)
      for (int c = 0; c < image.channels; ++c) box_blur_line(image.data + y * row_stride + c, image.width, image.channels, box, scratch);
  for (int pass = 0; pass < 3; ++pass)
    for (int x = 0; x < image.width; ++x)
      for (int c = 0; c < image.channels; ++c)
        box_blur_line(image.data + static_cast<int64_t>(x) * image.channels + c, image.height, row_stride, box, scratch);
}

}  // namespace cvtrain
