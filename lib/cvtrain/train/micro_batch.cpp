// The micro-batch search: bisection over divisors, each trial a real forward and backward.
#include "cvtrain/train/micro_batch.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/nn/module.h>

#include <algorithm>
#include <vector>

#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/observe/memory.h"
#include "cvtrain/train/model_snapshot.h"
#include "cvtrain/train/precision.h"

namespace cvtrain {
namespace {

std::vector<int64_t> divisors(int64_t n, int64_t minimum) {
  std::vector<int64_t> out;
  for (int64_t d = std::max<int64_t>(1, minimum); d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

bool trial_fits(Classifier& model, int64_t micro_batch, const MicroBatchProbe& probe) {
  release_cached_memory(probe.device);
  reset_peak_memory(probe.device);
  bool fits = true;
  try {
    const at::Tensor reserve = at::empty({probe.reserved_bytes}, at::TensorOptions(probe.device).dtype(at::kByte));
    const at::Tensor images =
        at::randn({micro_batch, probe.channels, probe.image_size, probe.image_size}, at::TensorOptions(probe.device))
            .contiguous(probe.channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous);
    at::Tensor loss = at::zeros({}, at::TensorOptions(probe.device));
    {
      AutocastScope autocast(probe.precision, probe.device.type());
      // Every output training's loss weighs (a segmentation model's auxiliary head's too), at the size it has.
      for (const at::Tensor& output : model.forward_outputs(images)) loss = loss + output.to(at::kFloat).logsumexp(1).mean();
    }
    loss.backward();
    fits = static_cast<double>(peak_memory_bytes(probe.device)) <= (1.0 - probe.margin) * static_cast<double>(device_memory_bytes(probe.device));
  } catch (const c10::OutOfMemoryError&) {
    fits = false;
  }
  model.zero_grad(/*set_to_none=*/true);
  release_cached_memory(probe.device);
  log::info("train.micro_batch: auto: {} images per micro-batch {}", micro_batch, fits ? "fit" : "do not fit");
  return fits;
}

}  // namespace

int64_t largest_fitting_divisor(int64_t per_rank, const std::function<bool(int64_t)>& fits, int64_t minimum) {
  const std::vector<int64_t> candidates = divisors(per_rank, minimum);
  int64_t lo = 0, hi = static_cast<int64_t>(candidates.size()) - 1, best = 0;
  while (lo <= hi) {  // invariant: everything below lo fits, everything above hi does not
    const int64_t mid = (lo + hi) / 2;
    if (fits(candidates[static_cast<size_t>(mid)])) {
      best = candidates[static_cast<size_t>(mid)];
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return best;
}

int64_t find_micro_batch(Classifier& model, int64_t per_rank, const MicroBatchProbe& probe) {
  if (!probe.device.is_cuda()) throw RecipeError({"train.micro_batch: auto needs a GPU; set a number"});
  ModelSnapshot snapshot(model, probe.device);
  model.train();
  // One image per rank is the only choice: nothing to probe (and a model that trains on one image
  // only through shared BatchNorm statistics cannot be probed alone).
  if (per_rank == 1) return 1;
  const int64_t chosen = largest_fitting_divisor(
      per_rank, [&](int64_t m) { return trial_fits(model, m, probe); }, probe.min_micro_batch);
  reset_peak_memory(probe.device);
  if (chosen == 0)
    throw Error(fmt::format("train.micro_batch: auto: not even {} image(s) per micro-batch fit on {} ({} precision, {} x {} pixels){}",
                            probe.min_micro_batch, probe.device.str(), probe.precision.name(), probe.image_size, probe.image_size,
                            probe.min_micro_batch > 1 ? " (the fewest this model trains on alone)" : ""));
  return chosen;
}

}  // namespace cvtrain
