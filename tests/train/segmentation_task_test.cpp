// Segmentation's task: the confusion matrix against IoU worked out pixel by pixel, summed over two
// ranks; pixel cross-entropy against PyTorch's; the auxiliary head's weight; the batches of pairs;
// an evaluation on two ranks equal to one.
#include "torch_catch.h"

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>

#include <cmath>

#include "cvtrain/comm/communicator.h"
#include "cvtrain/core/png_file.h"
#include "cvtrain/data/batch_loader.h"
#include "cvtrain/data/device_feeder.h"
#include "cvtrain/data/segmentation_batches.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/train/confusion_matrix.h"
#include "cvtrain/train/segmentation_task.h"
#include "image_files.h"
#include "two_ranks.h"

using namespace cvtrain;
using cvtrain::testing::TempDir;

namespace {

// IoU of each class counted pixel by pixel; NaN where a class is neither true nor predicted.
std::vector<double> iou_by_hand(const at::Tensor& predicted, const at::Tensor& truth, int64_t classes, int64_t ignore) {
  std::vector<double> iou;
  const auto p = predicted.reshape(-1).to(at::kLong), t = truth.reshape(-1).to(at::kLong);
  for (int64_t c = 0; c < classes; ++c) {
    double both = 0, either = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const int64_t ti = t[i].item<int64_t>(), pi = p[i].item<int64_t>();
      if (ti == ignore) continue;
      both += ti == c && pi == c;
      either += ti == c || pi == c;
    }
    iou.push_back(either > 0 ? both / either : std::nan(""));
  }
  return iou;
}

// A VOC-layout set of `n` 20x16 images, each a left half of class 1 and a right half of class 2
// (3 for odd samples), a border row unlabelled.
std::string write_pairs(const TempDir& dir, int n) {
  std::string ids;
  for (int i = 0; i < n; ++i) {
    const std::string id = "s" + std::to_string(i);
    std::vector<uint8_t> mask(20 * 16), rgb(20 * 16 * 3);
    for (int y = 0; y < 16; ++y)
      for (int x = 0; x < 20; ++x) {
        const uint8_t cls = y == 0 ? 255 : x < 10 ? 1 : (i % 2 ? 3 : 2);
        mask[y * 20 + x] = cls;
        for (int c = 0; c < 3; ++c) rgb[(y * 20 + x) * 3 + c] = static_cast<uint8_t>(cls == 255 ? 0 : 60 * cls + 20 * c + i);
      }
    cvtrain::testing::write_bytes(dir, "VOC/JPEGImages/" + id + ".jpg", cvtrain::testing::encode_jpeg_pixels(rgb, 20, 16, TJPF_RGB, 95));
    dir.write("VOC/SegmentationClass/" + id + ".png", "");
    write_png(dir.file("VOC/SegmentationClass/" + id + ".png"), mask.data(), 20, 16, 1);
    ids += id + "\n";
  }
  return dir.write("VOC/ImageSets/Segmentation/val.txt", ids);
}

}  // namespace

TEST_CASE("the confusion matrix gives mmseg's IoU, mIoU and pixel accuracy, and two ranks' halves sum to the whole", "[train]") {
  at::manual_seed(3);
  const int64_t classes = 5;
  at::Tensor truth = at::randint(0, classes, {4, 9, 7}, at::kLong);
  truth.masked_fill_(at::rand({4, 9, 7}) < 0.2, 255);
  truth.masked_fill_(truth == 4, 0);                                         // class 4 never true...
  at::Tensor predicted = at::randint(0, classes - 1, {4, 9, 7}, at::kLong);  // ...nor predicted: NaN, left out of the mean
  ConfusionMatrix whole(classes, 255, c10::Device(c10::kCPU));
  whole.add(predicted, truth.to(at::kByte));
  const SegmentationScores s = whole.scores(nullptr);
  const std::vector<double> expected = iou_by_hand(predicted, truth, classes, 255);
  REQUIRE(s.class_iou.size() == 5);
  CHECK(std::isnan(s.class_iou[4]));
  double sum = 0;
  for (int64_t c = 0; c < 4; ++c) {
    CHECK(s.class_iou[static_cast<size_t>(c)] == Approx(expected[static_cast<size_t>(c)]).epsilon(1e-15));
    sum += expected[static_cast<size_t>(c)];
  }
  CHECK(s.miou == Approx(sum / 4).epsilon(1e-15));
  const at::Tensor labelled = truth != 255;
  CHECK(s.labelled_pixels == labelled.sum().item<double>());
  CHECK(s.pixel_accuracy == Approx((predicted.eq(truth) & labelled).sum().item<double>() / s.labelled_pixels).epsilon(1e-15));

  std::vector<SegmentationScores> two(2);
  cvtrain::testing::on_two_ranks([&](Communicator& comm) {
    ConfusionMatrix half(classes, 255, c10::Device(c10::kCPU));
    half.add(predicted.narrow(0, comm.rank() * 2, 2), truth.narrow(0, comm.rank() * 2, 2));
    two[static_cast<size_t>(comm.rank())] = half.scores(&comm);
  });
  for (const auto& r : two) {
    CHECK(r.miou == s.miou);
    CHECK(r.pixel_accuracy == s.pixel_accuracy);
  }
}

TEST_CASE("pixel cross-entropy is PyTorch's over the labelled pixels, with class weights, and nothing labelled gives 0", "[train]") {
  namespace F = torch::nn::functional;
  at::manual_seed(5);
  const at::Tensor logits = at::randn({2, 3, 5, 4});
  at::Tensor truth = at::randint(0, 3, {2, 5, 4}, at::kLong);
  truth.masked_fill_(at::rand({2, 5, 4}) < 0.3, 255);
  const at::Tensor weights = at::tensor({0.5f, 2.0f, 1.0f});
  const auto reference = [&](const at::Tensor& w) {
    auto options = F::CrossEntropyFuncOptions().ignore_index(255);
    if (w.defined()) options.weight(w);
    return F::cross_entropy(logits, truth, options).item<float>();
  };
  CHECK(pixel_cross_entropy(logits, truth.to(at::kByte), 255, at::Tensor()).item<float>() == Approx(reference(at::Tensor())).epsilon(1e-6));
  CHECK(pixel_cross_entropy(logits, truth.to(at::kByte), 255, weights).item<float>() == Approx(reference(weights)).epsilon(1e-6));
  const at::Tensor nothing = at::full({2, 5, 4}, 255, at::kByte);
  const at::Tensor leaf = logits.clone().requires_grad_(true);
  const at::Tensor none = pixel_cross_entropy(leaf, nothing, 255, at::Tensor());
  none.backward();
  CHECK(none.item<float>() == 0.0f);
  CHECK(leaf.grad().abs().max().item<float>() == 0.0f);
}

TEST_CASE("the segmentation loss adds the auxiliary head's at train.aux_loss_weight", "[train]") {
  Recipe recipe;
  recipe.task = TaskKind::kSegmentation;
  recipe.train.aux_loss_weight = 0.4;
  const auto task = make_task(recipe);
  at::manual_seed(7);
  const at::Tensor main = at::randn({1, 4, 6, 6}), aux = at::randn({1, 4, 6, 6});
  const at::Tensor truth = at::randint(0, 4, {1, 6, 6}, at::kByte);
  const float alone = task->loss({main}, truth).item<float>();
  const float with_aux = task->loss({main, aux}, truth).item<float>();
  CHECK(with_aux == Approx(alone + 0.4f * pixel_cross_entropy(aux, truth, 255, at::Tensor()).item<float>()).epsilon(1e-6));
}

TEST_CASE("segmentation batches: crops and masks keyed by the sample, whole validation images with their masks", "[train]") {
  TempDir dir;
  const std::string split = write_pairs(dir, 4);
  const SegmentationDataset pairs(split, SegmentationLayout::kVoc, MaskCoding{4}, 0);
  JointAugment augment;
  augment.crop_height = 12;
  augment.crop_width = 8;
  augment.hflip = 0.5;
  SegmentationBatches train(pairs, SegmentationView{true, augment, 1, 0});
  const std::vector<int64_t> order{3, 1, 0, 2};
  const Batch a = train.make(order, 0, 3), b = train.make(order, 0, 3);
  CHECK(a.images.sizes() == at::IntArrayRef({3, 12, 8, 3}));
  CHECK(a.targets.sizes() == at::IntArrayRef({3, 12, 8}));
  CHECK(a.targets.scalar_type() == at::kByte);
  CHECK(at::equal(a.images, b.images));
  CHECK(at::equal(a.targets, b.targets));
  CHECK(a.first_sample == 3);
  SegmentationBatches val(pairs, SegmentationView{false, augment, 0, 0});
  const Batch whole = val.make(order, 1, 1);
  CHECK(whole.images.sizes() == at::IntArrayRef({1, 16, 20, 3}));
  CHECK(whole.targets[0][5][3].item<uint8_t>() == 1);
  CHECK(whole.targets[0][5][13].item<uint8_t>() == 3);  // sample 1: odd, class 3 on the right
  CHECK(whole.targets[0][0][0].item<uint8_t>() == 255);
}

TEST_CASE("a segmentation evaluation on two ranks gives one process's mIoU and loss", "[train]") {
  TempDir dir;
  const std::string split = write_pairs(dir, 5);  // odd: the ranks' shares differ
  const SegmentationDataset pairs(split, SegmentationLayout::kVoc, MaskCoding{4}, 0);
  Recipe recipe;
  recipe.task = TaskKind::kSegmentation;
  recipe.model.arch = "fcn_resnet18";
  recipe.model.num_classes = 4;
  const auto task = make_task(recipe);
  const auto model_for = [&] {
    at::manual_seed(11);
    return build_model(recipe.model, 3);
  };
  LoaderOptions loader;
  FeedOptions feed;
  feed.mean = {0.5, 0.5, 0.5};
  feed.std = {0.25, 0.25, 0.25};
  auto alone = single_process_communicator();
  const auto one_model = model_for();
  const EvalResult one = task->evaluate(*one_model, pairs, loader, feed, PrecisionPolicy{}, *alone, 4);
  REQUIRE(one.scores.size() == 3);
  CHECK(one.scores[0].first == "miou");
  CHECK(one.class_iou.size() == 4);
  CHECK_FALSE(std::isnan(one.class_iou[1]));  // class 1 is in every mask
  std::vector<std::shared_ptr<Classifier>> models{model_for(), model_for()};
  std::vector<EvalResult> two(2);
  cvtrain::testing::on_two_ranks([&](Communicator& comm) {
    const auto rank = static_cast<size_t>(comm.rank());
    two[rank] = task->evaluate(*models[rank], pairs, loader, feed, PrecisionPolicy{}, comm, 4);
  });
  for (const EvalResult& r : two) {
    CHECK(r.scores == one.scores);
    CHECK(r.loss == Approx(one.loss).epsilon(1e-12));
  }
}
