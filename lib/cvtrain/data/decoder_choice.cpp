// choose_decoder (see decoder_choice.h): the recipe's wish against the data, augmentation, device and library.
#include "cvtrain/data/decoder_choice.h"

#include <fmt/format.h>

#include "cvtrain/core/error.h"
#include "cvtrain/data/dataset.h"
#include "cvtrain/data/device_render.h"
#include "cvtrain/data/gpu_jpeg_decoder.h"
#include "cvtrain/recipe/augment_placement.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

std::string device_decode_obstacle(DataFormat format, const Dataset& train, const SampleTransform& transform, const c10::Device& device) {
  if (!holds_encoded_files(format))
    return fmt::format("data.format {} holds no JPEG files", name_of(format));
  if (train.channels() != 3) return fmt::format("the data has {} channel(s); nvJPEG decodes to RGB", train.channels());
  if (!device_renderable(transform))
    return fmt::format("{} runs on the CPU's decoded pixels", augment_needing_cpu_pixels(*transform.augment));
  if (!device.is_cuda()) return "nvJPEG decodes on a CUDA device; this run is on " + device.str();
  return {};
}

DecoderChoice choose_decoder(DecoderKind kind, DataFormat format, const Dataset& train, const SampleTransform& transform,
                             const c10::Device& device) {
  if (kind == DecoderKind::kCpu) return {nullptr, "data.decoder: cpu"};
  std::string why_not = device_decode_obstacle(format, train, transform, device);
  std::unique_ptr<GpuJpegDecoder> decoder;
  if (why_not.empty()) decoder = GpuJpegDecoder::open(device, why_not);
  if (!decoder) {
    if (kind == DecoderKind::kNvjpeg) throw Error("data.decoder nvjpeg: " + why_not);
    return {nullptr, fmt::format("data.decoder auto: cpu ({})", why_not)};
  }
  std::string summary = fmt::format("data.decoder {}: nvjpeg, {} backend, {}; files it does not take are decoded by the CPU workers",
                                    name_of(kind), decoder->backend(),
                                    decoder->decodes_regions() ? "decoding only each crop's region" : "decoding whole images");
  return {std::shared_ptr<JpegBatchDecoder>(std::move(decoder)), std::move(summary)};
}

}  // namespace cvtrain
