// Synthetic device batches: labels (or masks) follow the sample order, only full batches, one image tensor.
#include "torch_catch.h"

#include <ATen/ATen.h>

#include "cvtrain/data/synthetic.h"

using namespace cvtrain;

TEST_CASE("synthetic batches carry the labels of their samples in order and stop before a partial batch", "[data]") {
  const auto dataset = make_synthetic_dataset(/*samples=*/20, /*channels=*/3, /*classes=*/7);
  const std::vector<int64_t> order = {19, 3, 8, 14, 0, 6, 11, 2, 17, 5};  // 10 samples: 3 batches of 3, 1 left over
  FeedOptions options;
  SyntheticBatches batches(*dataset, order, /*batch_size=*/3, SyntheticShape{4, 4, false}, options, /*seed=*/1);

  std::vector<int64_t> labels, firsts;
  at::Tensor images;
  while (auto batch = batches.next()) {
    REQUIRE(batch->targets.sizes() == at::IntArrayRef({3}));
    CHECK(batch->targets.scalar_type() == at::kLong);
    for (int64_t i = 0; i < 3; ++i) labels.push_back(batch->targets[i].item<int64_t>());
    firsts.push_back(batch->first_sample);
    REQUIRE(batch->images.sizes() == at::IntArrayRef({3, 3, 4, 4}));
    if (images.defined()) CHECK(batch->images.data_ptr() == images.data_ptr());  // made once, reused
    images = batch->images;
  }
  CHECK(labels == std::vector<int64_t>{19 % 7, 3, 8 % 7, 14 % 7, 0, 6, 11 % 7, 2, 17 % 7});
  CHECK(firsts == std::vector<int64_t>{19, 14, 11});
  CHECK_FALSE(batches.next().has_value());
}

TEST_CASE("synthetic segmentation batches carry crops of the crop size and a mask of class ids each", "[data]") {
  const auto dataset = make_synthetic_dataset(/*samples=*/8, /*channels=*/3, /*classes=*/5);
  FeedOptions options;
  SyntheticBatches batches(*dataset, {0, 1, 2, 3, 4, 5, 6, 7}, /*batch_size=*/4, SyntheticShape{6, 10, true}, options, /*seed=*/1);
  int64_t count = 0;
  while (auto batch = batches.next()) {
    ++count;
    CHECK(batch->images.sizes() == at::IntArrayRef({4, 3, 6, 10}));
    REQUIRE(batch->targets.sizes() == at::IntArrayRef({4, 6, 10}));  // [B, H, W] as segmentation's batches carry them
    CHECK(batch->targets.scalar_type() == at::kByte);
    CHECK(batch->targets.max().item<int64_t>() <= 4);
    CHECK(at::bincount(batch->targets.flatten().to(at::kLong), {}, 5).min().item<int64_t>() > 0);  // each class in 240 random pixels
  }
  CHECK(count == 2);
}
