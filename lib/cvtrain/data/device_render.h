// A sample's crop plan (transforms.h) applied with ATen ops to a whole decoded image wherever it
// lies, CPU or GPU: what a GPU JPEG decoder's batch needs after decoding (resize and flip on the
// device, straight into the batch). The plan is the CPU path's own, so a sample's region and flip do
// not change with where it is rendered; only the resampling filter's arithmetic differs (ATen's
// antialiased bilinear or bicubic here; on the CPU Pillow's, or OpenCV's area or bilinear for a
// bilinear random resized crop).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "cvtrain/data/transforms.h"

namespace cvtrain {

// Whether render_on_device can make this transform's samples: random_resized_crop or the centre
// view, with or without the flip. Padding and augment.auto_augment / color_jitter run on the CPU.
bool device_renderable(const SampleTransform& transform);

// Renders `decoded` (uint8 HWC, the whole image at its full size) as `plan` says into `out` (uint8 HWC,
// image_size x image_size, the same channels; e.g. a slot of the batch), on their device.
void render_on_device(const at::Tensor& decoded, const CropPlan& plan, int64_t image_size, at::Tensor out);

}  // namespace cvtrain
