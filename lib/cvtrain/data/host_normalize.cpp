// Per-sample normalisation and erasing in the worker threads, with the feeder's float arithmetic
// (one rounding for the subtraction, one for the product), so the batch is the same bit for bit.
#include "cvtrain/data/host_normalize.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/util/ParallelGuard.h>

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

// The sample as a [C, side, side] tensor over its floats, whichever the layout.
at::Tensor sample_view(float* sample, int side, int channels, bool channels_last) {
  if (channels_last) return at::from_blob(sample, {side, side, channels}, at::kFloat).permute({2, 0, 1});
  return at::from_blob(sample, {channels, side, side}, at::kFloat);
}

}  // namespace

void erase_sample(float* sample, int side, int channels, const HostNormalize& how, const std::vector<EraseBox>& boxes, uint64_t key) {
  if (boxes.empty()) return;
  const c10::ParallelGuard one_thread(true);  // the other workers have the other cores
  const at::Tensor image = sample_view(sample, side, channels, how.channels_last);
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(key);
  for (const EraseBox& b : boxes) {  // later boxes over earlier ones, as timm fills them
    at::Tensor box = image.narrow(1, b.top, b.height).narrow(2, b.left, b.width);
    if (how.erase_mode == EraseMode::kConst) {
      box.zero_();
    } else if (how.erase_mode == EraseMode::kRand) {
      box.copy_(at::normal(0, 1, {channels, 1, 1}, generator, at::kFloat));
    } else {  // drawn contiguous (ATen's vectorised normal fill), then copied into the box
      box.copy_(at::normal(0, 1, {channels, b.height, b.width}, generator, at::kFloat));
    }
  }
}

}  // namespace cvtrain
