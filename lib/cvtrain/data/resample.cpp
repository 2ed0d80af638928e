// Pillow's ImagingResample for 8-bit images (libImaging/Resample.c): weights from the bilinear or
// bicubic filter widened by the shrink factor, normalised, turned into 22-bit fixed point; sums start at
// half a unit and are clipped to 0..255 after each pass.
#include "cvtrain/data/resample.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "cvtrain/core/error.h"
#include "cvtrain/data/resample_simd.h"

namespace cvtrain {
namespace {

double bilinear_filter(double x) {
  x = std::abs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// Pillow's bicubic_filter, a = -0.5 (as its own, not the -0.75 of OpenCV's INTER_CUBIC).
double bicubic_filter(double x) {
  constexpr double a = -0.5;
  x = std::abs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

uint8_t clip8(int32_t sum) { return static_cast<uint8_t>(std::clamp(sum >> kResamplePrecisionBits, 0, 255)); }

// One row of the horizontal pass; C (the channel count) known at compile time keeps the sums in
// registers.
template <int C>
void resample_row(const uint8_t* in, int in_width, int window_x, const ResampleAxis& x, uint8_t* to) {
  const int out_width = static_cast<int>(x.count.size());
  for (int o = 0; o < out_width; ++o) {
    const int32_t* w = &x.weights[static_cast<size_t>(o) * x.taps];
    int32_t sum[C];
    for (int c = 0; c < C; ++c) sum[c] = 1 << (kResamplePrecisionBits - 1);
    const int start = x.first[o] - window_x, count = x.count[o];
    if (start >= 0 && start + count <= in_width) {
      const uint8_t* p = in + static_cast<size_t>(start) * C;
      for (int t = 0; t < count; ++t, p += C)
        for (int c = 0; c < C; ++c) sum[c] += p[c] * w[t];
    } else {  // a scaled decode rounds its edges: an index outside the window reads the edge pixel
      for (int t = 0; t < count; ++t) {
        const uint8_t* p = in + static_cast<size_t>(std::clamp(start + t, 0, in_width - 1)) * C;
        for (int c = 0; c < C; ++c) sum[c] += p[c] * w[t];
      }
    }
    for (int c = 0; c < C; ++c) to[o * C + c] = clip8(sum[c]);
  }
}

// Sums fit 32 bits: the weights add up to one unit, their magnitudes (bicubic's lobes included)
// to under 1.3 (Pillow sums in int too).
void horizontal_row(const uint8_t* in, int in_width, int window_x, const ResampleAxis& x, int channels, uint8_t* to) {
  if (channels == 3)
    resample_row<3>(in, in_width, window_x, x, to);
  else
    resample_row<1>(in, in_width, window_x, x, to);
}

// One output row of the vertical pass: y's weights for output row `o` over `rows(t)`, each
// `width` values long.
template <class Row>
void vertical_row(const ResampleAxis& y, int o, size_t width, Row rows, std::vector<int32_t>& sums, uint8_t* to, bool simd) {
  const int32_t* w = &y.weights[static_cast<size_t>(o) * y.taps];
  if (simd) {  // the rows' pointers first: rows() must then return rows that stay put
    const uint8_t* inputs[64];
    if (y.count[o] <= 64) {
      for (int t = 0; t < y.count[o]; ++t) inputs[t] = rows(y.first[o] + t);
      return vertical_row_simd(inputs, w, y.count[o], width, to);
    }
  }
  std::fill(sums.begin(), sums.end(), 1 << (kResamplePrecisionBits - 1));
  for (int t = 0; t < y.count[o]; ++t) {
    const uint8_t* in = rows(y.first[o] + t);
    const int32_t weight = w[t];
    for (size_t i = 0; i < width; ++i) sums[i] += in[i] * weight;
  }
  for (size_t i = 0; i < width; ++i) to[i] = clip8(sums[i]);
}

// A row of the window at source row `row` (clamped: a scaled decode rounds its edges).
const uint8_t* window_row(const Image& window, int window_y, int row) {
  const int source_row = std::clamp(row - window_y, 0, window.height - 1);
  return &window.pixels[static_cast<size_t>(source_row) * window.width * window.channels];
}

// The horizontal pass over `count` rows, in(i) to to(i): eight rows a call to the vector kernel
// where the CPU has it (RGB), else a row at a time.
template <class In, class To>
void horizontal_rows(const ResampleAxis& x, int window_x, int in_width, int channels, bool simd, int count, In in, To to) {
  if (!simd || channels != 3) {
    for (int i = 0; i < count; ++i) horizontal_row(in(i), in_width, window_x, x, channels, to(i));
    return;
  }
  HorizontalRgbPass pass(x, window_x, in_width);
  int i = 0;
  for (; i + 8 <= count; i += 8) {
    const uint8_t* rows_in[8];
    uint8_t* rows_to[8];
    for (int k = 0; k < 8; ++k) {
      rows_in[k] = in(i + k);
      rows_to[k] = to(i + k);
    }
    pass.rows8(rows_in, rows_to);
  }
  for (; i < count; ++i) pass.row(in(i), to(i));
}

// The horizontal pass over the rows the vertical one reads, then the vertical pass.
void horizontal_then_vertical(const Image& window, int window_x, int window_y, const ResampleAxis& x, const ResampleAxis& y, uint8_t* out,
                              bool simd) {
  const int channels = window.channels, rows_begin = y.source_begin(), rows = y.source_end() - rows_begin;
  const size_t stride = x.count.size() * channels;
  std::vector<uint8_t> horizontal(static_cast<size_t>(rows) * stride);
  horizontal_rows(
      x, window_x, window.width, channels, simd, rows, [&](int r) { return window_row(window, window_y, rows_begin + r); },
      [&](int r) { return &horizontal[static_cast<size_t>(r) * stride]; });
  std::vector<int32_t> sums(stride);
  const auto row = [&](int source_row) { return &horizontal[static_cast<size_t>(source_row - rows_begin) * stride]; };
  for (size_t o = 0; o < y.count.size(); ++o) vertical_row(y, static_cast<int>(o), stride, row, sums, out + o * stride, simd);
}

// The vertical pass over the columns the horizontal one reads (edge columns repeated where the
// window is short of them), then the horizontal pass.
void vertical_then_horizontal(const Image& window, int window_x, int window_y, const ResampleAxis& x, const ResampleAxis& y, uint8_t* out,
                              bool simd) {
  const int channels = window.channels, columns_begin = x.source_begin(), columns = x.source_end() - columns_begin;
  const size_t width = static_cast<size_t>(columns) * channels;
  const bool inside = columns_begin - window_x >= 0 && columns_begin - window_x + columns <= window.width;
  std::vector<uint8_t> padded(inside ? 0 : width);
  const auto row = [&](int source_row) {
    const uint8_t* in = window_row(window, window_y, source_row);
    if (inside) return in + static_cast<size_t>(columns_begin - window_x) * channels;
    for (int c = 0; c < columns; ++c) {
      const int from = std::clamp(columns_begin + c - window_x, 0, window.width - 1);
      std::copy_n(in + static_cast<size_t>(from) * channels, channels, &padded[static_cast<size_t>(c) * channels]);
    }
    return static_cast<const uint8_t*>(padded.data());
  };
  const size_t out_rows = y.count.size(), stride = x.count.size() * channels;
  std::vector<uint8_t> vertical(out_rows * width);
  std::vector<int32_t> sums(width);
  // Where edge columns are repeated, row() reuses one buffer: the vector kernel wants its rows all at once.
  for (size_t o = 0; o < out_rows; ++o) vertical_row(y, static_cast<int>(o), width, row, sums, &vertical[o * width], simd && inside);
  horizontal_rows(
      x, columns_begin, columns, channels, simd, static_cast<int>(out_rows),
      [&](int o) { return static_cast<const uint8_t*>(&vertical[static_cast<size_t>(o) * width]); },
      [&](int o) { return out + static_cast<size_t>(o) * stride; });
}

}  // namespace

int ResampleAxis::source_begin() const { return first.empty() ? 0 : *std::min_element(first.begin(), first.end()); }

int ResampleAxis::source_end() const {
  int end = 0;
  for (size_t i = 0; i < first.size(); ++i) end = std::max(end, first[i] + count[i]);
  return end;
}

ResampleAxis resample_axis(ResizeFilter filter, int source_size, int resized_size, int keep_from, int keep) {
  const bool bicubic = filter == ResizeFilter::kBicubic;
  const auto weigh = bicubic ? bicubic_filter : bilinear_filter;
  const double scale = static_cast<double>(source_size) / resized_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = (bicubic ? 2.0 : 1.0) * filter_scale, inverse_scale = 1.0 / filter_scale;
  ResampleAxis axis;
  axis.source_size = source_size;
  axis.resized_size = resized_size;
  axis.taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  axis.weights.assign(static_cast<size_t>(keep) * axis.taps, 0);
  std::vector<double> k(axis.taps);
  for (int i = 0; i < keep; ++i) {
    const double center = (keep_from + i + 0.5) * scale;
    // Truncations and bounds exactly as Pillow's precompute_coeffs.
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax = std::min(static_cast<int>(center + support + 0.5), source_size) - xmin;
    double total = 0.0;
    for (int x = 0; x < xmax; ++x) total += k[x] = weigh((x + xmin - center + 0.5) * inverse_scale);
    int32_t* w = &axis.weights[static_cast<size_t>(i) * axis.taps];
    for (int x = 0; x < xmax; ++x) {
      const double normalised = total != 0.0 ? k[x] / total : k[x];
      w[x] = static_cast<int32_t>(normalised < 0 ? -0.5 + normalised * (1 << kResamplePrecisionBits) : 0.5 + normalised * (1 << kResamplePrecisionBits));
    }
    axis.first.push_back(xmin);
    axis.count.push_back(xmax);
  }
  return axis;
}

void resample(const Image& window, int window_x, int window_y, const ResampleAxis& x, const ResampleAxis& y, uint8_t* out,
              ResampleKernels kernels) {
  if (window.channels != 1 && window.channels != 3) throw Error(fmt::format("resample: {} channels (1 or 3 expected)", window.channels));
  // Pillow 13's ImagingResampleInner: the pass that shrinks much more goes first, on whole images.
  const int shrink_y = y.source_size - y.resized_size, shrink_x = x.source_size - x.resized_size;
  const bool simd = kernels == ResampleKernels::kFastest && resample_simd_available();
  if (shrink_y > 0 && shrink_y > 2 * shrink_x)
    vertical_then_horizontal(window, window_x, window_y, x, y, out, simd);
  else
    horizontal_then_vertical(window, window_x, window_y, x, y, out, simd);
}

}  // namespace cvtrain
