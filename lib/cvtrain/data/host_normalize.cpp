// Per-sample normalisation and erasing in the worker threads, with the feeder's float arithmetic
// (one rounding for the subtraction, one for the product), so the batch is the same bit for bit.
#include "cvtrain/data/host_normalize.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

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

void normalize_sample(const uint8_t* hwc, int side, int channels, const HostNormalize& how, float* out) {
  const size_t pixels = static_cast<size_t>(side) * side;
  if (how.channels_last) {
    for (size_t i = 0; i < pixels; ++i)
      for (int c = 0; c < channels; ++c)
        out[i * channels + c] = (static_cast<float>(hwc[i * channels + c]) - how.mean255[c]) * how.inv_std255[c];
    return;
  }
  for (int c = 0; c < channels; ++c) {
    const float mean = how.mean255[c], inv_std = how.inv_std255[c];
    float* plane = out + c * pixels;
    for (size_t i = 0; i < pixels; ++i) plane[i] = (static_cast<float>(hwc[i * channels + c]) - mean) * inv_std;
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
