// Per-sample normalisation and erasing in the worker threads, with the feeder's float arithmetic
// (one rounding for the subtraction, one for the product), so the batch is the same bit for bit.
#include "cvtrain/data/host_normalize.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <immintrin.h>

#include "cvtrain/core/cpu_features.h"
#include "cvtrain/data/device_feeder.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

std::optional<HostNormalize> host_normalize(const FeedOptions& feed) {
  if (!feed.device.is_cpu()) return std::nullopt;
  HostNormalize how;
  for (size_t c = 0; c < feed.mean.size() && c < feed.std.size(); ++c) {
    how.mean255.push_back(static_cast<float>(feed.mean[c] * 255.0));
    how.inv_std255.push_back(static_cast<float>(1.0 / (feed.std[c] * 255.0)));
  }
  how.channels_last = feed.channels_last;
  how.erase_mode = feed.erase_mode;
  return how;
}

namespace {

// Planar RGB, 16 pixels a step: the bytes split by channel with shuffles, widened to floats, and
// the same subtraction and product as the scalar loop (two roundings, no fused multiply-add).
__attribute__((target("avx2"))) size_t normalize_rgb_planar_avx2(const uint8_t* hwc, size_t pixels, const HostNormalize& how, float* out) {
  // Byte j of channel c of 16 pixels sits at 3 j + c of 48 bytes: gathered from three 16-byte loads.
  alignas(16) int8_t masks[3][3][16];
  for (int c = 0; c < 3; ++c)
    for (int part = 0; part < 3; ++part)
      for (int j = 0; j < 16; ++j) {
        const int at = 3 * j + c - 16 * part;
        masks[c][part][j] = at >= 0 && at < 16 ? static_cast<int8_t>(at) : -1;
      }
  size_t i = 0;
  for (; i + 16 <= pixels; i += 16) {
    const uint8_t* p = hwc + i * 3;
    const __m128i parts[3] = {_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)),
                              _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)),
                              _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 32))};
    for (int c = 0; c < 3; ++c) {
      __m128i bytes = _mm_setzero_si128();
      for (int part = 0; part < 3; ++part)
        bytes = _mm_or_si128(bytes, _mm_shuffle_epi8(parts[part], _mm_load_si128(reinterpret_cast<const __m128i*>(masks[c][part]))));
      const __m256 mean = _mm256_set1_ps(how.mean255[c]), inv_std = _mm256_set1_ps(how.inv_std255[c]);
      const __m256 low = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
      const __m256 high = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8)));
      float* plane = out + c * pixels + i;
      _mm256_storeu_ps(plane, _mm256_mul_ps(_mm256_sub_ps(low, mean), inv_std));
      _mm256_storeu_ps(plane + 8, _mm256_mul_ps(_mm256_sub_ps(high, mean), inv_std));
    }
  }
  return i;
}

}  // namespace

void normalize_sample(const uint8_t* hwc, int side, int channels, const HostNormalize& how, float* out) {
  const size_t pixels = static_cast<size_t>(side) * side;
  if (how.channels_last) {
    for (size_t i = 0; i < pixels; ++i)
      for (int c = 0; c < channels; ++c)
        out[i * channels + c] = (static_cast<float>(hwc[i * channels + c]) - how.mean255[c]) * how.inv_std255[c];
    return;
  }
  const size_t done = channels == 3 && cpu_has_avx2() ? normalize_rgb_planar_avx2(hwc, pixels, how, out) : 0;
  for (int c = 0; c < channels; ++c) {
    const float mean = how.mean255[c], inv_std = how.inv_std255[c];
    float* plane = out + c * pixels;
    for (size_t i = done; i < pixels; ++i) plane[i] = (static_cast<float>(hwc[i * channels + c]) - mean) * inv_std;
  }
}

namespace {

// Writes `values` (channels x height x width, or one per channel) into the box of the sample.
void fill_box(float* sample, int side, int channels, bool channels_last, const EraseBox& b, const float* values, bool per_pixel) {
  for (int c = 0; c < channels; ++c)
    for (int y = 0; y < b.height; ++y)
      for (int x = 0; x < b.width; ++x) {
        const size_t at = channels_last ? (static_cast<size_t>(b.top + y) * side + b.left + x) * channels + c
                                        : (static_cast<size_t>(c) * side + b.top + y) * side + b.left + x;
        sample[at] = per_pixel ? values[(static_cast<size_t>(c) * b.height + y) * b.width + x] : values[c];
      }
}

}  // namespace

void erase_sample(float* sample, int side, int channels, const HostNormalize& how, const std::vector<EraseBox>& boxes, uint64_t key) {
  if (boxes.empty()) return;
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(key);
  for (const EraseBox& b : boxes) {  // later boxes over earlier ones, as timm fills them
    if (how.erase_mode == EraseMode::kConst) {
      const std::vector<float> zeros(static_cast<size_t>(channels), 0.0f);
      fill_box(sample, side, channels, how.channels_last, b, zeros.data(), false);
      continue;
    }
    // ATen's normal fill on a contiguous tensor is a serial loop; copies into a strided box would
    // start OpenMP's threads, which then spin on the cores the other workers need.
    const bool per_pixel = how.erase_mode == EraseMode::kPixel;
    const at::Tensor values = per_pixel ? at::normal(0, 1, {channels, b.height, b.width}, generator, at::kFloat)
                                        : at::normal(0, 1, {channels}, generator, at::kFloat);
    fill_box(sample, side, channels, how.channels_last, b, values.data_ptr<float>(), per_pixel);
  }
}

}  // namespace cvtrain
