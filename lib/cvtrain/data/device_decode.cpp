// DeviceDecode (see device_decode.h): one batched decode, one render per sample, or the CPU path
// for the batch or the files the decoder refused.
#include "cvtrain/data/device_decode.h"

#include <ATen/ATen.h>

#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/data/device_render.h"
#include "cvtrain/data/jpeg_batch_decoder.h"

namespace cvtrain {
namespace {

// The part of the source a plan reads: a crop's region, or (the centre view) all of it.
PixelRect region_needed(const CropPlan& plan) {
  if (plan.resized_width > 0) return PixelRect{};
  return PixelRect{plan.x, plan.y, plan.width, plan.height};
}

// `plan` in the coordinates of a decoded window (which covers what region_needed asked for).
CropPlan plan_within(CropPlan plan, const DeviceWindow& window) {
  if (window.x == 0 && window.y == 0) return plan;
  if (plan.resized_width > 0) throw Error("DeviceDecode: the centre view needs the whole image, and the decoder returned part of it");
  plan.x -= window.x;
  plan.y -= window.y;
  return plan;
}

}  // namespace

DeviceDecode::DeviceDecode(JpegBatchDecoder& decoder, const Dataset& dataset, SampleTransform transform, BadSamples* bad)
    : decoder_(decoder), dataset_(dataset), transform_(std::move(transform)), bad_(bad) {}

void DeviceDecode::render(const std::vector<EncodedSample>& encoded, at::Tensor images, at::Tensor labels) {
  if (encoded.empty()) return;
  std::vector<const std::vector<uint8_t>*> files;
  std::vector<PixelRect> regions;
  for (const EncodedSample& sample : encoded) {
    files.push_back(&sample.bytes);
    regions.push_back(region_needed(sample.plan));
  }
  std::vector<DeviceWindow> decoded;
  try {
    decoded = decoder_.decode(files, regions);
  } catch (const Error& e) {
    log::warn("data.decoder: {}; this batch's {} files are decoded on the CPU", e.what(), encoded.size());
    render_on_host(encoded, images, labels);
    return;
  }
  std::vector<EncodedSample> refused;
  for (size_t k = 0; k < encoded.size(); ++k) {
    if (!decoded[k].pixels.defined()) {
      refused.push_back(encoded[k]);
      continue;
    }
    render_on_device(decoded[k].pixels, plan_within(encoded[k].plan, decoded[k]), transform_.image_size, images[encoded[k].slot]);
    ++device_decoded_;
  }
  render_on_host(refused, images, labels);
}

// The CPU path for each sample, keyed as before: prepare_sample from the same sample and draw.
void DeviceDecode::render_on_host(const std::vector<EncodedSample>& encoded, at::Tensor images, at::Tensor labels) {
  if (encoded.empty()) return;
  const int64_t side = transform_.image_size;
  at::Tensor pixels = at::empty({side, side, 3}, at::kByte);
  for (const EncodedSample& sample : encoded) {
    const size_t used = prepare_sample(dataset_, sample.index, transform_, bad_, pixels.data_ptr<uint8_t>(), nullptr, sample.draw);
    images[sample.slot].copy_(pixels);
    if (used != sample.index) labels[sample.slot].fill_(dataset_.label(used));
  }
  host_decoded_ += static_cast<int64_t>(encoded.size());
}

}  // namespace cvtrain
