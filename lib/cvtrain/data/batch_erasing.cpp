// Box masks by broadcasting (one kernel per step of the mask, whatever the batch size), and the
// fill from a generator of the batch's own, so erasing is as reproducible as the crops.
#include "cvtrain/data/batch_erasing.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>

#include <algorithm>

#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

at::Tensor erase_box_tensor(const std::vector<std::vector<EraseBox>>& boxes, bool pinned) {
  size_t most = 0;
  for (const auto& sample : boxes) most = std::max(most, sample.size());
  if (most == 0) return {};
  at::Tensor out = at::zeros({static_cast<int64_t>(boxes.size()), static_cast<int64_t>(most), 4},
                             at::TensorOptions(at::kInt).pinned_memory(pinned));
  int32_t* p = out.data_ptr<int32_t>();
  for (size_t i = 0; i < boxes.size(); ++i)
    for (size_t k = 0; k < boxes[i].size(); ++k) {
      int32_t* box = p + (i * most + k) * 4;
      box[0] = boxes[i][k].top;
      box[1] = boxes[i][k].left;
      box[2] = boxes[i][k].height;
      box[3] = boxes[i][k].width;
    }
  return out;
}

void erase_batch(at::Tensor& images, const at::Tensor& boxes, EraseMode mode, uint64_t key) {
  if (!boxes.defined()) return;
  // Only the samples that have a box (a quarter at timm's 0.25): on the CPU, noise and masks for the
  // whole batch cost more than normalising it. Which ones is read from the boxes, still on the host.
  const at::Tensor which = boxes.select(2, 2).gt(0).any(1).nonzero().squeeze(1);
  if (which.numel() == 0) return;
  const auto device = images.device();
  const at::Tensor index = which.to(device, /*non_blocking=*/true);
  const at::Tensor b = boxes.index_select(0, which).to(device, /*non_blocking=*/true);
  at::Tensor erased = images.index_select(0, index);
  const auto positions = at::TensorOptions(device).dtype(at::kInt);
  const at::Tensor rows = at::arange(images.size(2), positions).view({1, 1, -1, 1});
  const at::Tensor cols = at::arange(images.size(3), positions).view({1, 1, 1, -1});
  const auto part = [&](int64_t i) { return b.select(2, i).unsqueeze(-1).unsqueeze(-1); };  // [n, K, 1, 1]
  const at::Tensor top = part(0), left = part(1);
  const at::Tensor inside = (rows >= top) & (rows < top + part(2)) & (cols >= left) & (cols < left + part(3));  // [n, K, H, W]
  at::Generator generator = at::globalContext().defaultGenerator(device).clone();
  generator.set_current_seed(key);
  const auto values = erased.options();
  if (mode == EraseMode::kConst) {
    erased.masked_fill_(inside.any(1, /*keepdim=*/true), 0);
  } else if (mode == EraseMode::kPixel) {
    const at::Tensor noise = at::normal(0, 1, erased.sizes(), generator, values);
    erased = at::where(inside.any(1, /*keepdim=*/true), noise, erased);
  } else {
    for (int64_t k = 0; k < inside.size(1); ++k) {  // later boxes over earlier ones, as timm fills them
      const at::Tensor colour = at::normal(0, 1, {erased.size(0), erased.size(1), 1, 1}, generator, values);
      erased = at::where(inside.narrow(1, k, 1), colour, erased);
    }
  }
  images.index_copy_(0, index, erased);
}

}  // namespace cvtrain
