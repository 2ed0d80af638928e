// The table of known GPUs (see device_peaks.h). Sources: NVIDIA's datasheets, dense figures.
#include "cvtrain/observe/device_peaks.h"

#include <array>

namespace cvtrain {
namespace {

struct KnownGpu {
  const char* name_part;  // the first entry whose part the device name contains wins: specific ones first
  double fp32, tf32, half;  // half: bf16 and fp16 on tensor cores (V100: fp16 only)
};

constexpr std::array<KnownGpu, 14> kKnownGpus{{
    {"B200", 80, 1100, 2250},
    {"H100 PCIe", 51, 378, 756},
    {"H100 NVL", 60, 418, 835},
    {"H100", 67, 495, 989},  // SXM, including "H100 80GB HBM3"
    {"H200", 67, 495, 989},  // GH200 too
    {"H800", 67, 495, 989},
    {"A100", 19.5, 156, 312},
    {"A800", 19.5, 156, 312},
    {"A30", 10.3, 82, 165},
    {"A10", 31.2, 62.5, 125},
    {"L40S", 91.6, 183, 362},
    {"L4", 30.3, 60, 121},
    {"RTX 4090", 82.6, 82.6, 165},
    {"V100", 15.7, 15.7, 125},
}};

}  // namespace

std::optional<double> known_peak_tflops(const std::string& device_name, Precision precision) {
  for (const KnownGpu& gpu : kKnownGpus) {
    if (device_name.find(gpu.name_part) == std::string::npos) continue;
    switch (precision) {
      case Precision::kFp32:
        return gpu.fp32;
      case Precision::kTf32:
        return gpu.tf32;
      case Precision::kBf16:
      case Precision::kFp16:
        return gpu.half;
    }
  }
  return std::nullopt;
}

}  // namespace cvtrain
