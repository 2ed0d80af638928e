// Random erasing on a device batch: exactly the planned boxes change, each mode fills as timm's.
#include "torch_catch.h"

#include <ATen/ATen.h>

#include "cvtrain/data/batch_erasing.h"
#include "cvtrain/recipe/recipe.h"

using namespace cvtrain;

TEST_CASE("erase_batch fills only the boxes: zeros, a colour per box, or noise per pixel", "[augment]") {
  const std::vector<std::vector<EraseBox>> boxes{{{1, 2, 3, 4}}, {}, {{0, 0, 2, 2}, {5, 5, 3, 3}}};
  const at::Tensor box_tensor = erase_box_tensor(boxes, false);
  REQUIRE(box_tensor.sizes() == at::IntArrayRef({3, 2, 4}));
  CHECK_FALSE(erase_box_tensor({{}, {}}, false).defined());
  for (EraseMode mode : {EraseMode::kConst, EraseMode::kRand, EraseMode::kPixel}) {
    const at::Tensor original = at::full({3, 3, 8, 8}, 7.0f);
    at::Tensor images = original.clone();
    erase_batch(images, box_tensor, mode, 42);
    const at::Tensor changed = images.ne(original).any(1);  // [B, H, W]
    CHECK(changed[0].sum().item<int64_t>() == 12);
    CHECK(changed[0].slice(0, 1, 4).slice(1, 2, 6).all().item<bool>());
    CHECK(changed[1].sum().item<int64_t>() == 0);
    CHECK(changed[2].sum().item<int64_t>() == 4 + 9);
    const at::Tensor box = images[0].slice(1, 1, 4).slice(2, 2, 6);
    if (mode == EraseMode::kConst) CHECK(box.abs().max().item<float>() == 0.0f);
    if (mode == EraseMode::kRand) CHECK(box.std({1, 2}).max().item<float>() == 0.0f);  // one colour per channel
    if (mode == EraseMode::kPixel) CHECK(box.std().item<float>() > 0.3f);
    at::Tensor again = original.clone();
    erase_batch(again, box_tensor, mode, 42);
    CHECK(again.equal(images));  // the key fixes the fill
  }
}
