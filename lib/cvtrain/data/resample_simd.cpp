// Integer sums are exact in any order, so the vector kernels give the portable loops' bytes: eight
// rows' bytes of one column share a 256-bit register (horizontal, after a transpose; a single row
// puts a pixel's three channels and two taps there), or eight columns of a row do (vertical);
// products and sums in 32 bits, as Pillow's.
#include "cvtrain/data/resample_simd.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "cvtrain/core/cpu_features.h"
#include "cvtrain/data/resample.h"

namespace cvtrain {
namespace {

constexpr int kSlackPixels = 8;             // a 16-byte load at the last tap pair reads past it

}  // namespace

bool resample_simd_available() { return cpu_has_avx2(); }

HorizontalRgbPass::HorizontalRgbPass(const ResampleAxis& x, int window_x, int in_width) : in_width_(in_width) {
  const auto outputs = x.count.size();
  pairs_ = (x.taps + 1) / 2;
  lanes_.assign(outputs * pairs_ * 8, 0);
  int lowest = 0, highest = in_width;
  for (size_t o = 0; o < outputs; ++o) {
    const int start = x.first[o] - window_x;
    lowest = std::min(lowest, start);
    highest = std::max(highest, start + 2 * pairs_);
    for (int t = 0; t < x.count[o]; ++t)
      for (int c = 0; c < 3; ++c) lanes_[(o * pairs_ + t / 2) * 8 + (t % 2) * 4 + c] = x.weights[o * x.taps + t];
  }
  pad_left_ = -lowest;
  for (size_t o = 0; o < outputs; ++o) start_.push_back(x.first[o] - window_x + pad_left_);
  const size_t padded_bytes = (static_cast<size_t>(pad_left_ + highest + kSlackPixels) * 3 + 7) / 8 * 8;  // whole 8-byte blocks
  padded_.assign(padded_bytes, 0);
  taps_ = x.taps;
  weights_.assign(x.weights.begin(), x.weights.end());
  count_.assign(x.count.begin(), x.count.end());
  padded8_.assign(padded_bytes * 8, 0);
  columns_.assign(padded_bytes * 8, 0);
  results_.assign((outputs * 3 + 7) / 8 * 8 * 8, 0);
}

// The row where the taps read it, edge pixels repeated outside (the portable loop clamps).
void HorizontalRgbPass::pad(const uint8_t* in, uint8_t* padded) const {
  const int total = static_cast<int>(padded_.size() / 3);
  for (int p = 0; p < pad_left_; ++p) std::memcpy(padded + p * 3, in, 3);
  std::memcpy(padded + pad_left_ * 3, in, static_cast<size_t>(in_width_) * 3);
  for (int p = pad_left_ + in_width_; p < total; ++p) std::memcpy(padded + p * 3, in + (in_width_ - 1) * 3, 3);
}

namespace {

// One output pixel's weighted sums, [R, G, B, 0] per lane (taps 0, 1 of each group of four in the
// low lane, 2, 3 in the high one): `pairs` pairs of taps from `p`. kPairs > 0 fixes the count at
// compile time (the common ones are unrolled); 0 reads it from `pairs`.
template <int kPairs>
__attribute__((target("avx2"), always_inline)) inline __m256i weighted_pixel(const uint8_t* p, const int32_t* w, int pairs) {
  // Bytes of taps 0 and 1 (low lane) and 2 and 3 (high lane) of a 16-byte load, each to an int32.
  const __m256i spread_01 = _mm256_setr_epi8(0, -1, -1, -1, 1, -1, -1, -1, 2, -1, -1, -1, -1, -1, -1, -1,  //
                                             3, -1, -1, -1, 4, -1, -1, -1, 5, -1, -1, -1, -1, -1, -1, -1);
  const __m256i spread_23 = _mm256_setr_epi8(6, -1, -1, -1, 7, -1, -1, -1, 8, -1, -1, -1, -1, -1, -1, -1,  //
                                             9, -1, -1, -1, 10, -1, -1, -1, 11, -1, -1, -1, -1, -1, -1, -1);
  if (kPairs > 0) pairs = kPairs;
  __m256i sum = _mm256_setzero_si256();
  for (int pair = 0; pair < pairs; pair += 2, p += 12, w += 16) {
    const __m256i bytes = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    sum = _mm256_add_epi32(
        sum, _mm256_mullo_epi32(_mm256_shuffle_epi8(bytes, spread_01), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w))));
    if (pair + 1 < pairs)
      sum = _mm256_add_epi32(
          sum, _mm256_mullo_epi32(_mm256_shuffle_epi8(bytes, spread_23), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 8))));
  }
  return sum;
}

// Rounded, shifted and clipped sums of two pixels: bytes R G B x in each lane's low 4 bytes.
__attribute__((target("avx2"), always_inline)) inline __m256i rounded_pixels(__m256i first, __m256i second) {
  const __m256i half = _mm256_set1_epi32(1 << (kResamplePrecisionBits - 1));
  __m256i rgb = _mm256_add_epi32(_mm256_permute2x128_si256(first, second, 0x20), _mm256_permute2x128_si256(first, second, 0x31));
  rgb = _mm256_srai_epi32(_mm256_add_epi32(rgb, half), kResamplePrecisionBits);
  rgb = _mm256_packs_epi32(rgb, rgb);
  return _mm256_packus_epi16(rgb, rgb);  // saturating: the clip to 0..255
}

template <int kPairs>
__attribute__((target("avx2"))) void weighted_row(const uint8_t* padded, const int* start, const int32_t* lanes, int pairs, size_t outputs,
                                                  uint8_t* to) {
  const size_t step = static_cast<size_t>(pairs) * 8;
  size_t o = 0;
  for (; o + 1 < outputs; o += 2) {
    const __m256i first = weighted_pixel<kPairs>(padded + start[o] * 3, lanes + o * step, pairs);
    const __m256i second = weighted_pixel<kPairs>(padded + start[o + 1] * 3, lanes + (o + 1) * step, pairs);
    const __m256i bytes = rounded_pixels(first, second);
    const int32_t a = _mm256_cvtsi256_si32(bytes), b = _mm_cvtsi128_si32(_mm256_extracti128_si256(bytes, 1));
    std::memcpy(to + o * 3, &a, 4);  // its fourth byte is the next pixel's, written next
    std::memcpy(to + o * 3 + 3, &b, 3);
  }
  if (o < outputs) {
    const __m256i last = weighted_pixel<kPairs>(padded + start[o] * 3, lanes + o * step, pairs);
    const int32_t a = _mm256_cvtsi256_si32(rounded_pixels(last, last));
    std::memcpy(to + o * 3, &a, 3);
  }
}

}  // namespace

void HorizontalRgbPass::row(const uint8_t* in, uint8_t* to) {
  uint8_t* padded = padded_.data();
  pad(in, padded);
  const auto kernel = pairs_ == 1   ? weighted_row<1>
                      : pairs_ == 2 ? weighted_row<2>
                      : pairs_ == 3 ? weighted_row<3>
                      : pairs_ == 4 ? weighted_row<4>
                                    : weighted_row<0>;
  kernel(padded, start_.data(), lanes_.data(), pairs_, start_.size(), to);
}

namespace {

// 8 rows x 8 bytes -> 8 bytes x 8 rows: out[q] holds bytes 2q and 2q + 1 of the eight rows, eight
// each (row k's byte j at j * 8 + k); applied to its own output it transposes back.
__attribute__((target("avx2"), always_inline)) inline void transpose_8x8(const __m128i r[8], __m128i out[4]) {
  const __m128i a0 = _mm_unpacklo_epi8(r[0], r[1]), a1 = _mm_unpacklo_epi8(r[2], r[3]);
  const __m128i a2 = _mm_unpacklo_epi8(r[4], r[5]), a3 = _mm_unpacklo_epi8(r[6], r[7]);
  const __m128i b0 = _mm_unpacklo_epi16(a0, a1), b1 = _mm_unpackhi_epi16(a0, a1);
  const __m128i b2 = _mm_unpacklo_epi16(a2, a3), b3 = _mm_unpackhi_epi16(a2, a3);
  out[0] = _mm_unpacklo_epi32(b0, b2);
  out[1] = _mm_unpackhi_epi32(b0, b2);
  out[2] = _mm_unpacklo_epi32(b1, b3);
  out[3] = _mm_unpackhi_epi32(b1, b3);
}

// Eight rows of `bytes` bytes (a multiple of 8) to columns[j * 8 + k] = rows[k][j].
__attribute__((target("avx2"))) void rows_to_columns(const uint8_t* const rows[8], size_t bytes, uint8_t* columns) {
  for (size_t j = 0; j < bytes; j += 8) {
    __m128i r[8], out[4];
    for (int k = 0; k < 8; ++k) r[k] = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(rows[k] + j));
    transpose_8x8(r, out);
    for (int q = 0; q < 4; ++q) _mm_storeu_si128(reinterpret_cast<__m128i*>(columns + j * 8 + q * 16), out[q]);
  }
}

// The inverse, rows[k][j] = columns[j * 8 + k], for j < bytes (columns holds whole blocks of 8).
__attribute__((target("avx2"))) void columns_to_rows(const uint8_t* columns, size_t bytes, uint8_t* const rows[8]) {
  for (size_t j = 0; j < bytes; j += 8) {
    __m128i r[8], out[4];
    for (int k = 0; k < 8; ++k) r[k] = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(columns + (j + k) * 8));
    transpose_8x8(r, out);  // out[q]: rows 2q and 2q + 1, bytes j..j+7 of each
    if (j + 8 <= bytes) {
      for (int q = 0; q < 4; ++q) {
        _mm_storel_epi64(reinterpret_cast<__m128i*>(rows[2 * q] + j), out[q]);
        _mm_storeh_pd(reinterpret_cast<double*>(rows[2 * q + 1] + j), _mm_castsi128_pd(out[q]));
      }
      continue;
    }
    for (int q = 0; q < 4; ++q) {  // the last, partial block: no bytes written past a row's end
      alignas(16) uint8_t both[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(both), out[q]);
      std::memcpy(rows[2 * q] + j, both, bytes - j);
      std::memcpy(rows[2 * q + 1] + j, both + 8, bytes - j);
    }
  }
}

// One output pixel in eight rows: each tap's three channels (eight rows a load) times its weight,
// the three sums side by side so that their multiplications overlap.
__attribute__((target("avx2"))) void weigh_columns(const uint8_t* columns, const int* start, const int* count, const int32_t* weights,
                                                   int taps, size_t outputs, uint8_t* results) {
  const __m256i half = _mm256_set1_epi32(1 << (kResamplePrecisionBits - 1));
  for (size_t o = 0; o < outputs; ++o) {
    const uint8_t* column = columns + static_cast<size_t>(start[o]) * 24;
    const int32_t* w = weights + o * taps;
    __m256i sum[3] = {half, half, half};
    for (int t = 0; t < count[o]; ++t, column += 24) {
      const __m256i weight = _mm256_set1_epi32(w[t]);
      for (int c = 0; c < 3; ++c) {
        const __m256i bytes = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(column + c * 8)));
        sum[c] = _mm256_add_epi32(sum[c], _mm256_mullo_epi32(bytes, weight));
      }
    }
    for (int c = 0; c < 3; ++c) {
      const __m256i shifted = _mm256_srai_epi32(sum[c], kResamplePrecisionBits);
      const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(shifted), _mm256_extracti128_si256(shifted, 1));
      // saturating: the clip to 0..255; bytes 0..7 are rows 0..7
      _mm_storel_epi64(reinterpret_cast<__m128i*>(results + (o * 3 + c) * 8), _mm_packus_epi16(words, words));
    }
  }
}

}  // namespace

void HorizontalRgbPass::rows8(const uint8_t* const in[8], uint8_t* const to[8]) {
  const size_t bytes = padded_.size();
  const uint8_t* padded[8];
  for (int k = 0; k < 8; ++k) {
    uint8_t* row = padded8_.data() + k * bytes;
    pad(in[k], row);
    padded[k] = row;
  }
  rows_to_columns(padded, bytes, columns_.data());
  weigh_columns(columns_.data(), start_.data(), count_.data(), weights_.data(), taps_, start_.size(), results_.data());
  columns_to_rows(results_.data(), start_.size() * 3, to);
}

__attribute__((target("avx2"))) void vertical_row_simd(const uint8_t* const* rows, const int32_t* weights, int taps, size_t width,
                                                       uint8_t* out) {
  const __m256i half = _mm256_set1_epi32(1 << (kResamplePrecisionBits - 1));
  size_t i = 0;
  for (; i + 16 <= width; i += 16) {
    __m256i a = half, b = half;
    for (int t = 0; t < taps; ++t) {
      const __m256i w = _mm256_set1_epi32(weights[t]);
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[t] + i));
      a = _mm256_add_epi32(a, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(bytes), w));
      b = _mm256_add_epi32(b, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8)), w));
    }
    a = _mm256_srai_epi32(a, kResamplePrecisionBits);
    b = _mm256_srai_epi32(b, kResamplePrecisionBits);
    const __m256i words = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xD8);  // undo the per-lane interleave
    const __m128i bytes = _mm_packus_epi16(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), bytes);
  }
  for (; i < width; ++i) {
    int32_t sum = 1 << (kResamplePrecisionBits - 1);
    for (int t = 0; t < taps; ++t) sum += rows[t][i] * weights[t];
    out[i] = static_cast<uint8_t>(std::clamp(sum >> kResamplePrecisionBits, 0, 255));
  }
}

}  // namespace cvtrain
