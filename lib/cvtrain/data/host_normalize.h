// The loader's workers normalise and erase each sample themselves when the model runs on the CPU:
// done per batch on the consumer's thread, this pass is serial and a second worker barely helps.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "cvtrain/data/erasing_plan.h"

namespace cvtrain {

enum class EraseMode;
struct FeedOptions;

// What DeviceFeeder would do to a batch, for one sample: (pixel - 255 mean) / (255 std) in float,
// laid out NCHW or channels_last, then its random-erasing boxes filled.
struct HostNormalize {
  std::vector<float> mean255, inv_std255;  // per channel, rounded to float as the feeder's tensors are
  bool channels_last = false;
  EraseMode erase_mode{};
};

// The workers' share of `feed`'s work: set for a CPU device, none for a GPU (there the batch
// travels as uint8, a quarter of the bytes, and is normalised on the device).
std::optional<HostNormalize> host_normalize(const FeedOptions& feed);

// `hwc`: one sample's side x side x channels bytes; `out`: its channels x side x side floats.
void normalize_sample(const uint8_t* hwc, int side, int channels, const HostNormalize& how, float* out);

// Fills `boxes` of one normalised sample as erase_batch fills them on a device (zeros, a normal
// colour per box, or normal noise per pixel), from a generator seeded with `key`.
void erase_sample(float* sample, int side, int channels, const HostNormalize& how, const std::vector<EraseBox>& boxes, uint64_t key);

}  // namespace cvtrain
