// train.micro_batch: auto — the largest micro-batch that fits in GPU memory, found at start by
// trying a forward and backward pass, with room kept for the optimizer state and a margin.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <string>

#include "cvtrain/recipe/precision_policy.h"

namespace cvtrain {

class Classifier;

// The largest divisor of `per_rank`, `minimum` or more, for which fits() holds (fits assumed
// monotone: what fits at m fits below m), found by bisection over the divisors; 0 when none fits.
int64_t largest_fitting_divisor(int64_t per_rank, const std::function<bool(int64_t)>& fits, int64_t minimum = 1);

struct MicroBatchProbe {
  c10::Device device = c10::Device(c10::kCUDA);
  int64_t channels = 3, image_size = 224;
  PrecisionPolicy precision;
  bool channels_last = false;
  int64_t min_micro_batch = 1;  // the fewest images the model trains on (2 with a pooled BatchNorm: arch_traits.h)
  int64_t reserved_bytes = 0;  // kept allocated while probing: the optimizer state still to come
  double margin = 0.1;         // a micro-batch fits when its peak stays below (1 - margin) of the GPU
};

// Tries forward + backward of random batches on `model` (its buffers and the random generators
// are restored afterwards, its gradients cleared). Needs a CUDA device.
int64_t find_micro_batch(Classifier& model, int64_t per_rank, const MicroBatchProbe& probe);

}  // namespace cvtrain
