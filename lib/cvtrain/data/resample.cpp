// Pillow's ImagingResample for 8-bit images (libImaging/Resample.c): weights from the bilinear
// filter widened by the shrink factor, normalised, turned into 22-bit fixed point; sums start at
// half a unit and are clipped to 0..255 after each pass.
#include "cvtrain/data/resample.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "cvtrain/core/error.h"

namespace cvtrain {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

double bilinear_filter(double x) {
  x = std::abs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

uint8_t clip8(int32_t sum) { return static_cast<uint8_t>(std::clamp(sum >> kPrecisionBits, 0, 255)); }

// One row of the horizontal pass; C (the channel count) known at compile time keeps the sums in
// registers.
template <int C>
void resample_row(const uint8_t* in, int in_width, int window_x, const ResampleAxis& x, uint8_t* to) {
  const int out_width = static_cast<int>(x.count.size());
  for (int o = 0; o < out_width; ++o) {
    const int32_t* w = &x.weights[static_cast<size_t>(o) * x.taps];
    int32_t sum[C];
    for (int c = 0; c < C; ++c) sum[c] = 1 << (kPrecisionBits - 1);
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

}  // namespace

int ResampleAxis::source_begin() const { return first.empty() ? 0 : *std::min_element(first.begin(), first.end()); }

int ResampleAxis::source_end() const {
  int end = 0;
  for (size_t i = 0; i < first.size(); ++i) end = std::max(end, first[i] + count[i]);
  return end;
}

ResampleAxis bilinear_axis(int source_size, int resized_size, int keep_from, int keep) {
  const double scale = static_cast<double>(source_size) / resized_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = 1.0 * filter_scale, inverse_scale = 1.0 / filter_scale;
  ResampleAxis axis;
  axis.taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  axis.weights.assign(static_cast<size_t>(keep) * axis.taps, 0);
  std::vector<double> k(axis.taps);
  for (int i = 0; i < keep; ++i) {
    const double center = (keep_from + i + 0.5) * scale;
    // Truncations and bounds exactly as Pillow's precompute_coeffs.
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax = std::min(static_cast<int>(center + support + 0.5), source_size) - xmin;
    double total = 0.0;
    for (int x = 0; x < xmax; ++x) total += k[x] = bilinear_filter((x + xmin - center + 0.5) * inverse_scale);
    int32_t* w = &axis.weights[static_cast<size_t>(i) * axis.taps];
    for (int x = 0; x < xmax; ++x) {
      const double normalised = total != 0.0 ? k[x] / total : k[x];
      w[x] = static_cast<int32_t>(normalised < 0 ? -0.5 + normalised * (1 << kPrecisionBits) : 0.5 + normalised * (1 << kPrecisionBits));
    }
    axis.first.push_back(xmin);
    axis.count.push_back(xmax);
  }
  return axis;
}


void resample(const Image& window, int window_x, int window_y, const ResampleAxis& x, const ResampleAxis& y, uint8_t* out) {
  const int channels = window.channels, out_width = static_cast<int>(x.count.size()), out_height = static_cast<int>(y.count.size());
  if (channels != 1 && channels != 3) throw Error(fmt::format("resample: {} channels (1 or 3 expected)", channels));
  const int rows_begin = y.source_begin(), rows = y.source_end() - rows_begin;
  const size_t stride = static_cast<size_t>(out_width) * channels;
  // Horizontal pass over the rows the vertical one reads. Sums fit 32 bits: the weights are
  // non-negative and add up to one unit (Pillow sums in int too).
  std::vector<uint8_t> horizontal(static_cast<size_t>(rows) * stride);
  for (int r = 0; r < rows; ++r) {
    const int source_row = std::clamp(rows_begin + r - window_y, 0, window.height - 1);
    const uint8_t* in = &window.pixels[static_cast<size_t>(source_row) * window.width * channels];
    uint8_t* to = &horizontal[static_cast<size_t>(r) * stride];
    if (channels == 3)
      resample_row<3>(in, window.width, window_x, x, to);
    else
      resample_row<1>(in, window.width, window_x, x, to);
  }
  std::vector<int32_t> sums(stride);
  // Vertical pass, a whole output row at a time.
  for (int o = 0; o < out_height; ++o) {
    const int32_t* w = &y.weights[static_cast<size_t>(o) * y.taps];
    std::fill(sums.begin(), sums.end(), 1 << (kPrecisionBits - 1));
    for (int t = 0; t < y.count[o]; ++t) {
      const uint8_t* in = &horizontal[static_cast<size_t>(y.first[o] + t - rows_begin) * stride];
      const int32_t weight = w[t];
      for (size_t i = 0; i < stride; ++i) sums[i] += in[i] * weight;
    }
    for (size_t i = 0; i < stride; ++i) out[o * stride + i] = clip8(sums[i]);
  }
}

}  // namespace cvtrain
