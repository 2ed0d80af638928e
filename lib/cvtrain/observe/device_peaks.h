// Dense peak TFLOP/s of known GPUs for each precision, the denominator of MFU (model FLOPs
// utilisation). Datasheet figures without sparsity; a GPU not in the table has no peak unless
// the recipe gives observe.peak_tflops, and a CPU never has one (no guess). Torch-free.
#pragma once

#include <optional>
#include <string>

#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

// The peak for a device named as CUDA names it ("NVIDIA H200", "NVIDIA A100-SXM4-80GB"), or nullopt.
std::optional<double> known_peak_tflops(const std::string& device_name, Precision precision);

// Whether a GPU of this compute capability computes in bf16 at tensor-core rate (Ampere and later).
inline bool has_fast_bf16(int compute_capability_major) { return compute_capability_major >= 8; }

}  // namespace cvtrain
