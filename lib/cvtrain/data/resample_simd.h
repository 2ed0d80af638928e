// AVX2 kernels for data/resample.cpp's two passes: the same integer sums as the portable loops (so
// the same bytes, Pillow's), several output values per instruction. Chosen at run time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cvtrain {

struct ResampleAxis;

// Whether this CPU runs the kernels below.
bool resample_simd_available();

// The horizontal pass for 3-channel rows: each output pixel's weights spread over the lanes of its
// tap pairs ([w, w, w, 0, w', w', w', 0]), and its first source pixel relative to the padded row.
class HorizontalRgbPass {
 public:
  // For rows whose pixel 0 is source pixel `window_x` and which are `in_width` pixels wide.
  HorizontalRgbPass(const ResampleAxis& x, int window_x, int in_width);
  // One row: `in` (in_width pixels, RGB) to x's kept outputs in `to`.
  void row(const uint8_t* in, uint8_t* to);
  // Eight rows at once, each byte of the eight rows in one vector: transposed in, the taps summed
  // eight rows to an instruction, transposed back.
  void rows8(const uint8_t* const in[8], uint8_t* const to[8]);

 private:
  void pad(const uint8_t* in, uint8_t* padded) const;
  std::vector<int32_t> lanes_;                        // per output, pairs_ x 8 weights (row)
  std::vector<int32_t> weights_;                      // per output, taps_ weights (rows8)
  std::vector<int> start_;                            // per output, in the padded row
  std::vector<int> count_;                            // per output, its taps
  std::vector<uint8_t> padded_;                       // the row with its edge pixels repeated where the taps reach past it
  std::vector<uint8_t> padded8_, columns_, results_;  // rows8's eight padded rows, them transposed, its outputs transposed
  int pairs_ = 0, taps_ = 0, pad_left_ = 0, in_width_ = 0;
};

// out[i] = clip8(half + sum_t rows[t][i] * weights[t]) for i < width: one output row of the vertical pass.
void vertical_row_simd(const uint8_t* const* rows, const int32_t* weights, int taps, size_t width, uint8_t* out);

}  // namespace cvtrain
