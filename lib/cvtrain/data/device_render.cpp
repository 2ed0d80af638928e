// render_on_device (see device_render.h): the plan's region resized with ATen's antialiased
// bilinear or bicubic filter (torchvision's Resize(antialias=True) on tensors), flipped, rounded to 8 bits.
#include "cvtrain/data/device_render.h"

#include <ATen/ATen.h>

#include "cvtrain/core/error.h"
#include "cvtrain/recipe/augment_placement.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

bool device_renderable(const SampleTransform& t) { return !t.augment || !augment_needing_cpu_pixels(*t.augment); }

void render_on_device(const at::Tensor& decoded, const CropPlan& plan, int64_t image_size, at::Tensor out) {
  if (plan.pad_dx >= 0) throw Error("render_on_device: padded crops are rendered on the CPU");
  // 1 x C x H x W floats, of only the part the plan reads (a crop's region, the centre view's whole image).
  const auto as_float = [](const at::Tensor& hwc) { return hwc.permute({2, 0, 1}).unsqueeze(0).to(at::kFloat); };
  const bool bicubic = plan.filter == ResizeFilter::kBicubic;
  const auto resized = [bicubic](const at::Tensor& image, int64_t height, int64_t width) {
    return bicubic ? at::_upsample_bicubic2d_aa(image, {height, width}, /*align_corners=*/false)
                   : at::_upsample_bilinear2d_aa(image, {height, width}, /*align_corners=*/false);
  };
  at::Tensor view;
  if (plan.resized_width > 0) {
    // The centre view: the whole image resized, the square at (keep_x, keep_y) kept.
    view = resized(as_float(decoded), plan.resized_height, plan.resized_width)
               .narrow(2, plan.keep_y, image_size)
               .narrow(3, plan.keep_x, image_size);
  } else {
    const at::Tensor region = as_float(decoded.narrow(0, plan.y, plan.height).narrow(1, plan.x, plan.width));
    view = plan.width == image_size && plan.height == image_size ? region : resized(region, image_size, image_size);
  }
  if (plan.flip) view = view.flip(3);
  if (plan.vflip) view = view.flip(2);
  // The triangle filter's weights are non-negative and sum to 1, so bilinear values stay within
  // 0..255 and rounding is all the conversion needs (a launch per sample fewer); bicubic's negative
  // lobes overshoot at edges, clipped as Pillow clips them.
  view.round_();
  if (bicubic) view.clamp_(0, 255);
  out.copy_(view.squeeze(0).permute({1, 2, 0}));
}

}  // namespace cvtrain
