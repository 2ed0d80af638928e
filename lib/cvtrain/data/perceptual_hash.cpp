// perceptual_hash: area-averaged 32 x 32 gray (ITU-R 601 luma, as Pillow's convert("L")), a DCT-II
// along rows then columns (scipy's unnormalised one, as imagehash uses), and the median of the 8 x 8
// lowest frequencies.
#include "cvtrain/data/perceptual_hash.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>

namespace cvtrain {
namespace {

constexpr int kSide = 32, kKept = 8;
// A cosine of amplitude A gray levels gives a coefficient of A x 32 x 32: below a quarter of a gray
// level at every low frequency, the picture has no detail to hash.
constexpr double kFlatBelow = 0.25 * kSide * kSide;

using Grid = std::array<std::array<double, kSide>, kSide>;

// The pixels [first, last] one cell of an axis averages, as fractions of the cell: the inner ones
// weigh `inner`, the two at the ends what of them the cell covers.
struct CellSpan {
  int first = 0, last = 0;
  float first_weight = 0, inner = 0, last_weight = 0;
};

// Each of the kSide cells an axis of `size` pixels is averaged into, covering size / kSide pixels
// (fractions of pixels at its ends; under 32 pixels, part of one pixel).
std::array<CellSpan, kSide> cell_spans(int size) {
  std::array<CellSpan, kSide> spans{};
  const double step = static_cast<double>(size) / kSide;
  for (int cell = 0; cell < kSide; ++cell) {
    const double begin = cell * step, end = begin + step;
    CellSpan& span = spans[cell];
    span.first = static_cast<int>(begin);
    span.last = std::min(size - 1, static_cast<int>(std::ceil(end)) - 1);
    span.inner = static_cast<float>(1 / step);
    span.first_weight = static_cast<float>((std::min(end, span.first + 1.0) - begin) / step);
    span.last_weight = span.last > span.first ? static_cast<float>((end - span.last) / step) : 0.0f;
  }
  return spans;
}

// The gray picture area-averaged to kSide x kSide: each row's luma added into the (one or two)
// cell rows it falls in, then each cell row averaged across.
Grid averaged_gray(const Image& image) {
  const auto down = cell_spans(image.height), across = cell_spans(image.width);
  const auto width = static_cast<size_t>(image.width);
  std::vector<float> cell_rows(kSide * width, 0.0f), luma(width);
  int cell = 0;
  for (int y = 0; y < image.height; ++y) {
    const uint8_t* p = &image.pixels[static_cast<size_t>(y) * width * static_cast<size_t>(image.channels)];
    if (image.channels < 3)
      for (size_t x = 0; x < width; ++x) luma[x] = p[x * image.channels];
    else
      for (size_t x = 0; x < width; ++x) luma[x] = 0.299f * p[3 * x] + 0.587f * p[3 * x + 1] + 0.114f * p[3 * x + 2];
    while (cell < kSide - 1 && down[cell].last < y) ++cell;
    for (int c = cell; c < kSide && down[c].first <= y; ++c) {  // cells that cover row y
      const CellSpan& span = down[c];
      const float weight = y == span.first ? span.first_weight : y == span.last ? span.last_weight : span.inner;
      float* row = &cell_rows[static_cast<size_t>(c) * width];
      for (size_t x = 0; x < width; ++x) row[x] += weight * luma[x];
    }
  }
  Grid grid{};
  for (int gy = 0; gy < kSide; ++gy) {
    const float* row = &cell_rows[static_cast<size_t>(gy) * width];
    for (int gx = 0; gx < kSide; ++gx) {
      const CellSpan& span = across[gx];
      double sum = span.first_weight * row[span.first];
      for (int x = span.first + 1; x < span.last; ++x) sum += span.inner * row[x];
      if (span.last > span.first) sum += span.last_weight * row[span.last];
      grid[gy][gx] = sum;
    }
  }
  return grid;
}

// The lowest `kKept` frequencies of the DCT-II of `grid` (2 cos(pi (n + 1/2) k / N) per axis), [v][u].
std::array<double, kKept * kKept> low_frequencies(const Grid& grid) {
  static const auto basis = [] {
    std::array<std::array<double, kSide>, kKept> b{};
    for (int k = 0; k < kKept; ++k)
      for (int n = 0; n < kSide; ++n) b[k][n] = 2 * std::cos(M_PI * (n + 0.5) * k / kSide);
    return b;
  }();
  std::array<std::array<double, kKept>, kSide> rows{};  // each row's kKept frequencies
  for (int y = 0; y < kSide; ++y)
    for (int u = 0; u < kKept; ++u)
      for (int x = 0; x < kSide; ++x) rows[y][u] += basis[u][x] * grid[y][x];
  std::array<double, kKept * kKept> out{};
  for (int v = 0; v < kKept; ++v)
    for (int u = 0; u < kKept; ++u)
      for (int y = 0; y < kSide; ++y) out[v * kKept + u] += basis[v][y] * rows[y][u];
  return out;
}

}  // namespace

std::optional<uint64_t> perceptual_hash(const Image& image) {
  if (image.width <= 0 || image.height <= 0) return std::nullopt;
  const auto coefficients = low_frequencies(averaged_gray(image));
  double largest_ac = 0;
  for (size_t i = 1; i < coefficients.size(); ++i) largest_ac = std::max(largest_ac, std::abs(coefficients[i]));
  if (largest_ac < kFlatBelow) return std::nullopt;
  auto sorted = coefficients;
  std::nth_element(sorted.begin(), sorted.begin() + 31, sorted.end());
  const double low_middle = sorted[31];
  const double high_middle = *std::min_element(sorted.begin() + 32, sorted.end());
  const double median = (low_middle + high_middle) / 2;  // numpy's median of 64 values
  uint64_t hash = 0;
  for (size_t i = 0; i < coefficients.size(); ++i) hash |= uint64_t{coefficients[i] > median} << (63 - i);
  return hash;
}

double picture_correlation(const Image& a, const Image& b) {
  if (a.width <= 0 || a.height <= 0 || b.width <= 0 || b.height <= 0) return 0;
  const Grid x = averaged_gray(a), y = averaged_gray(b);
  double mean_x = 0, mean_y = 0;
  for (int r = 0; r < kSide; ++r)
    for (int c = 0; c < kSide; ++c) mean_x += x[r][c], mean_y += y[r][c];
  mean_x /= kSide * kSide, mean_y /= kSide * kSide;
  double xy = 0, xx = 0, yy = 0;
  for (int r = 0; r < kSide; ++r)
    for (int c = 0; c < kSide; ++c) {
      const double dx = x[r][c] - mean_x, dy = y[r][c] - mean_y;
      xy += dx * dy, xx += dx * dx, yy += dy * dy;
    }
  return xx > 0 && yy > 0 ? xy / std::sqrt(xx * yy) : 0.0;
}

int hash_distance(uint64_t a, uint64_t b) { return __builtin_popcountll(a ^ b); }

}  // namespace cvtrain
