// The resize's vector kernels against its portable loops: the same bytes for every geometry the
// pipeline produces (shrinks and enlargements, both filters, both pass orders, windows whose edges
// the taps reach past, 1 and 3 channels). The portable loops are held to Pillow by tests/parity.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "cvtrain/core/rng.h"
#include "cvtrain/data/resample.h"
#include "cvtrain/data/resample_simd.h"

using namespace cvtrain;

namespace {

Image noise_image(int width, int height, int channels, uint64_t seed) {
  Image image{std::vector<uint8_t>(static_cast<size_t>(width) * height * channels), width, height, channels};
  SplitMix64 rng(seed);
  for (auto& p : image.pixels) p = static_cast<uint8_t>(rng.next() >> 56);
  // Runs of black and white: bicubic's lobes overshoot there, so the clip to 0..255 is exercised.
  for (int y = 0; y < height; y += 7)
    for (int x = 0; x < width * channels; ++x) image.pixels[static_cast<size_t>(y) * width * channels + x] = x % 6 < 3 ? 0 : 255;
  return image;
}

}  // namespace

TEST_CASE("the resize's vector kernels give the portable loops' bytes on every geometry", "[data]") {
  if (!resample_simd_available()) {
    WARN("this CPU has no AVX2: the portable loops are the only kernels");
    return;
  }
  SplitMix64 rng(2026);
  int compared = 0, vertical_first = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int channels = trial % 5 == 0 ? 1 : 3;
    const auto filter = trial % 2 ? ResizeFilter::kBicubic : ResizeFilter::kBilinear;
    // A source, the resize, the kept window of it, and a decoded window that may stop short of the
    // source's edges (a scaled decode rounds them).
    const int source_w = 8 + static_cast<int>(rng.below(600)), source_h = 8 + static_cast<int>(rng.below(600));
    const int resized_w = 4 + static_cast<int>(rng.below(400)), resized_h = 4 + static_cast<int>(rng.below(400));
    const int keep_w = 1 + static_cast<int>(rng.below(static_cast<uint64_t>(resized_w)));
    const int keep_h = 1 + static_cast<int>(rng.below(static_cast<uint64_t>(resized_h)));
    const int keep_x = static_cast<int>(rng.below(static_cast<uint64_t>(resized_w - keep_w + 1)));
    const int keep_y = static_cast<int>(rng.below(static_cast<uint64_t>(resized_h - keep_h + 1)));
    const ResampleAxis x = resample_axis(filter, source_w, resized_w, keep_x, keep_w);
    const ResampleAxis y = resample_axis(filter, source_h, resized_h, keep_y, keep_h);
    const int short_x = static_cast<int>(rng.below(3)), short_y = static_cast<int>(rng.below(3));
    const int window_x = x.source_begin() + short_x, window_y = y.source_begin() + short_y;
    const int window_w = std::max(1, x.source_end() - window_x - static_cast<int>(rng.below(3)));
    const int window_h = std::max(1, y.source_end() - window_y - static_cast<int>(rng.below(3)));
    const Image window = noise_image(window_w, window_h, channels, static_cast<uint64_t>(trial));
    std::vector<uint8_t> fast(static_cast<size_t>(keep_w) * keep_h * channels), portable(fast.size());
    resample(window, window_x, window_y, x, y, fast.data(), ResampleKernels::kFastest);
    resample(window, window_x, window_y, x, y, portable.data(), ResampleKernels::kPortable);
    INFO(fmt::format("{} channel(s), {}, {}x{} -> {}x{}, kept {}x{} at {},{}, window {}x{} at {},{}", channels,
                     filter == ResizeFilter::kBicubic ? "bicubic" : "bilinear", source_w, source_h, resized_w, resized_h, keep_w, keep_h,
                     keep_x, keep_y, window_w, window_h, window_x, window_y));
    REQUIRE(fast == portable);
    ++compared;
    const int shrink_y = source_h - resized_h, shrink_x = source_w - resized_w;
    vertical_first += shrink_y > 0 && shrink_y > 2 * shrink_x;
  }
  CHECK(compared == 400);
  CHECK(vertical_first >= 40);  // both pass orders were compared
}
