// data.decoder resolved for a run's training data: nvJPEG on the GPU where the recipe asks for it
// (or, with auto, wherever it can run), else the loader's CPU workers. Evaluation always decodes
// on the CPU: its centre view is Pillow's, pixel for pixel.
#pragma once

#include <c10/core/Device.h>

#include <memory>
#include <string>

namespace cvtrain {

class Dataset;
class JpegBatchDecoder;
enum class DataFormat;
enum class DecoderKind;
struct SampleTransform;

struct DecoderChoice {
  std::shared_ptr<JpegBatchDecoder> device;  // null: the CPU workers decode
  std::string summary;                       // for the log: which decoder, and why where auto chose the CPU
};

// Why nvJPEG cannot decode this run's training samples; empty when it can (given the library).
std::string device_decode_obstacle(DataFormat format, const Dataset& train, const SampleTransform& transform, const c10::Device& device);

// nvjpeg: the decoder, or an Error saying why not; auto: it where it can run, else the CPU with the reason.
DecoderChoice choose_decoder(DecoderKind kind, DataFormat format, const Dataset& train, const SampleTransform& transform,
                             const c10::Device& device);

}  // namespace cvtrain
