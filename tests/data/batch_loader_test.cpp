// BatchLoader and DeviceFeeder: identical batches for any number of workers, uint8 NHWC batches,
// normalisation and layout on the device side, errors in order, bad samples skipped and bounded.
#include "torch_catch.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <numeric>

#include "cvtrain/core/error.h"
#include "cvtrain/core/rng.h"
#include "cvtrain/data/batch_loader.h"
#include "cvtrain/data/device_feeder.h"
#include "cvtrain/data/image_folder.h"
#include "cvtrain/data/sampler.h"
#include "cvtrain/recipe/recipe.h"
#include "image_files.h"

using namespace cvtrain;

namespace {

// 4x4 single-channel images whose pixels encode the sample index; sample `bad` fails to decode.
class CountingDataset : public Dataset {
 public:
  CountingDataset(size_t n, int64_t bad = -1) : n_(n), bad_(bad) {}
  size_t size() const override { return n_; }
  int64_t label(size_t index) const override { return static_cast<int64_t>(index % 3); }
  int64_t num_classes() const override { return 3; }
  int channels() const override { return 1; }
  RawSample read(size_t index) const override {
    if (static_cast<int64_t>(index) == bad_) throw Error(describe(index) + ": corrupt");
    Image image{std::vector<uint8_t>(16), 4, 4, 1};
    for (size_t p = 0; p < 16; ++p) image.pixels[p] = static_cast<uint8_t>((index * 16 + p) % 256);
    return RawSample{{}, image};
  }
  std::string describe(size_t index) const override { return "sample " + std::to_string(index); }

 private:
  size_t n_;
  int64_t bad_;
};

LoaderOptions options(int64_t workers, const AugmentSpec* augment) {
  LoaderOptions o;
  o.batch_size = 8;
  o.workers = workers;
  o.prefetch = 2;
  o.transform = SampleTransform{augment, 4, 7, 1};
  return o;
}

// 16x16 RGB images of hashed pixels, so every channel and position differs.
class ColourDataset : public Dataset {
 public:
  size_t size() const override { return 24; }
  int64_t label(size_t index) const override { return static_cast<int64_t>(index % 2); }
  int64_t num_classes() const override { return 2; }
  int channels() const override { return 3; }
  RawSample read(size_t index) const override {
    Image image{std::vector<uint8_t>(16 * 16 * 3), 16, 16, 3};
    for (size_t p = 0; p < image.pixels.size(); ++p) image.pixels[p] = static_cast<uint8_t>(mix64(index * 1000 + p));
    return RawSample{{}, image};
  }
  std::string describe(size_t index) const override { return "colour " + std::to_string(index); }
};

std::vector<int64_t> reversed(size_t n) {
  std::vector<int64_t> order(n);
  std::iota(order.rbegin(), order.rend(), int64_t{0});
  return order;
}

}  // namespace

TEST_CASE("batches are identical with 0, 1 and 3 workers", "[data]") {
  CountingDataset data(61);
  AugmentSpec augment;
  augment.hflip = FlipChance{0.5};
  augment.random_crop_padding = 1;
  std::vector<Batch> reference;
  BatchLoader serial(data, reversed(61), options(0, &augment));
  while (auto b = serial.next()) reference.push_back(*b);
  REQUIRE(reference.size() == 8);  // 61 samples, last batch of 5 kept
  CHECK(reference.back().images.size(0) == 5);
  for (int64_t workers : {1, 3}) {
    BatchLoader threaded(data, reversed(61), options(workers, &augment));
    size_t i = 0;
    while (auto b = threaded.next()) {
      REQUIRE(i < reference.size());
      CHECK(at::equal(b->images, reference[i].images));
      CHECK(at::equal(b->targets, reference[i].targets));
      ++i;
    }
    CHECK(i == reference.size());
  }
}

TEST_CASE("all workers decode at once: prefetch bounds only the finished batches", "[data]") {
  // Reads wait (2 s at most) until four are running together, so the loader must have four
  // batches of one sample in the making at once although only one may wait finished.
  class GatheringDataset : public CountingDataset {
   public:
    using CountingDataset::CountingDataset;
    RawSample read(size_t index) const override {
      std::unique_lock<std::mutex> lock(mutex_);
      most_at_once = std::max(most_at_once, ++running_);
      if (running_ >= 4 || waited_) together_.notify_all();
      else waited_ = !together_.wait_for(lock, std::chrono::seconds(2), [&] { return running_ >= 4; });
      --running_;
      lock.unlock();
      return CountingDataset::read(index);
    }
    mutable int most_at_once = 0;

   private:
    mutable std::mutex mutex_;
    mutable std::condition_variable together_;
    mutable int running_ = 0;
    mutable bool waited_ = false;  // gave up once: the rest go through at once
  } data(12);
  LoaderOptions o = options(4, nullptr);
  o.batch_size = 1;
  o.prefetch = 1;
  BatchLoader loader(data, reversed(12), o);
  int64_t batches = 0;
  while (loader.next()) ++batches;
  CHECK(batches == 12);
  CHECK(data.most_at_once == 4);
}

TEST_CASE("batches are uint8 NHWC in order, and the feeder normalises them", "[data]") {
  CountingDataset data(16);
  BatchLoader loader(data, reversed(16), options(2, nullptr));
  const Batch first = *loader.next();
  REQUIRE(first.images.sizes() == at::IntArrayRef({8, 4, 4, 1}));
  CHECK(first.images.scalar_type() == at::kByte);
  CHECK(first.targets[0].item<int64_t>() == 15 % 3);
  CHECK(first.first_sample == 15);
  CHECK(first.images[0][0][0][0].item<int64_t>() == 240);  // sample 15, pixel 0: (15*16) % 256

  BatchLoader again(data, reversed(16), options(2, nullptr));
  FeedOptions feed;
  feed.mean = {0.5};
  feed.std = {0.25};
  DeviceFeeder feeder(again, feed);
  const DeviceBatch on_device = *feeder.next();
  REQUIRE(on_device.images.sizes() == at::IntArrayRef({8, 1, 4, 4}));
  CHECK(on_device.images.is_contiguous());
  CHECK(on_device.images[0][0][0][0].item<float>() == Approx((240.0 / 255.0 - 0.5) / 0.25));
  CHECK(on_device.images[0][0][0][1].item<float>() == Approx((241.0 / 255.0 - 0.5) / 0.25));
}

TEST_CASE("channels_last feeding keeps values and gives NHWC strides", "[data]") {
  // 3-channel data: NHWC strides only differ from NCHW when C > 1.
  class Rgb : public Dataset {
   public:
    size_t size() const override { return 4; }
    int64_t label(size_t) const override { return 0; }
    int64_t num_classes() const override { return 2; }
    int channels() const override { return 3; }
    RawSample read(size_t index) const override {
      Image image{std::vector<uint8_t>(5 * 5 * 3), 5, 5, 3};
      for (size_t p = 0; p < image.pixels.size(); ++p) image.pixels[p] = static_cast<uint8_t>(p + index);
      return RawSample{{}, image};
    }
    std::string describe(size_t index) const override { return std::to_string(index); }
  } data;
  LoaderOptions o;
  o.batch_size = 4;
  o.transform = SampleTransform{nullptr, 5, 0, 0};
  FeedOptions feed;
  feed.mean = {0.1, 0.2, 0.3};
  feed.std = {0.5, 0.6, 0.7};
  at::Tensor plain, nhwc;
  for (bool channels_last : {false, true}) {
    BatchLoader loader(data, {0, 1, 2, 3}, o);
    feed.channels_last = channels_last;
    DeviceFeeder feeder(loader, feed);
    (channels_last ? nhwc : plain) = feeder.next()->images;
  }
  CHECK(plain.is_contiguous());
  CHECK(nhwc.is_contiguous(at::MemoryFormat::ChannelsLast));
  CHECK_FALSE(nhwc.is_contiguous());
  CHECK(at::equal(plain, nhwc));
  // Sample 2, channel 1, pixel (y 3, x 4): byte (3*5 + 4)*3 + 1 + 2.
  CHECK(plain[2][1][3][4].item<float>() == Approx(((19 * 3 + 3) / 255.0 - 0.2) / 0.6));
}

TEST_CASE("drop_last drops only the incomplete batch", "[data]") {
  CountingDataset data(20);
  LoaderOptions o = options(1, nullptr);
  o.drop_last = true;
  BatchLoader loader(data, reversed(20), o);
  CHECK(loader.num_batches() == 2);
}

TEST_CASE("a sample that fails surfaces at its own batch, naming it", "[data]") {
  CountingDataset data(40, /*bad=*/3);  // index 3 sits in batch 4 of the reversed order
  BatchLoader loader(data, reversed(40), options(2, nullptr));
  for (int i = 0; i < 4; ++i) REQUIRE(loader.next().has_value());
  CHECK_THROWS_WITH(loader.next(), Catch::Contains("sample 3"));
}

TEST_CASE("normalisation that does not match the channels is an error", "[data]") {
  CountingDataset data(8);
  BatchLoader loader(data, reversed(8), options(0, nullptr));
  FeedOptions feed;
  feed.mean = {0.485, 0.456, 0.406};
  feed.std = {0.229, 0.224, 0.225};
  DeviceFeeder feeder(loader, feed);
  CHECK_THROWS_WITH(feeder.next(), Catch::Contains("data.mean") && Catch::Contains("1 channel"));
}

TEST_CASE("unusable samples are replaced, counted, and stop the run past the limit", "[data]") {
  CountingDataset data(40, /*bad=*/3);
  SECTION("within the limit the batch keeps its size and takes the next sample") {
    BadSamples bad("data.train", data.size(), 0.05);
    LoaderOptions o = options(2, nullptr);
    o.bad_samples = &bad;
    std::vector<int64_t> order{2, 3, 4, 5, 6, 7, 8, 9};
    BatchLoader loader(data, order, o);
    const Batch batch = *loader.next();
    CHECK(bad.count() == 1);
    CHECK(bad.contains(3));
    // Slot 1 (sample 3) holds sample 4's pixels and label.
    CHECK(at::equal(batch.images[1], batch.images[2]));
    CHECK(batch.images[1][0][0][0].item<int64_t>() == 64);
    CHECK(batch.targets[1].item<int64_t>() == 4 % 3);
  }
  SECTION("past the limit the error names the data, the count and the sample") {
    BadSamples bad("data.train", data.size(), 0.01);
    LoaderOptions o = options(1, nullptr);
    o.bad_samples = &bad;
    BatchLoader loader(data, {3, 4}, o);
    CHECK_THROWS_WITH(loader.next(), Catch::Contains("data.train: 1 of 40 samples") && Catch::Contains("data.max_bad_fraction") &&
                                         Catch::Contains("sample 3"));
  }
}

TEST_CASE("JPEG batches with crops, flips and DCT scaling are identical for 1 and 4 workers and across runs", "[data]") {
  cvtrain::testing::TempDir dir;
  for (int i = 0; i < 24; ++i)
    cvtrain::testing::write_bytes(dir, "root/c" + std::to_string(i % 3) + "/" + std::to_string(i) + ".jpg",
                                  cvtrain::testing::encode_jpeg(300 + 7 * i, 200 + 5 * i, static_cast<uint8_t>(9 * i), 77));
  const ImageFolderDataset data(dir.file("root"), 0);
  AugmentSpec augment;
  augment.random_resized_crop = {0.08, 1.0};
  augment.hflip = FlipChance{0.5};
  LoaderOptions o;
  o.batch_size = 5;
  o.transform = SampleTransform{&augment, 64, 11, 2};
  const auto all_batches = [&](int64_t workers) {
    o.workers = workers;
    BatchLoader loader(data, epoch_order(11, 2, data.size()), o);
    std::vector<Batch> out;
    while (auto b = loader.next()) out.push_back(*b);
    return out;
  };
  const std::vector<Batch> one = all_batches(1), four = all_batches(4), again = all_batches(1);
  REQUIRE(one.size() == 5);
  for (size_t i = 0; i < one.size(); ++i) {
    CHECK(at::equal(one[i].images, four[i].images));
    CHECK(at::equal(one[i].images, again[i].images));
    CHECK(at::equal(one[i].targets, four[i].targets));
  }
  CHECK_FALSE(at::equal(one[0].images[0], one[0].images[1]));
}

TEST_CASE("the copies of repeated augmentation are one sample with draws of their own", "[data]") {
  CountingDataset data(8);
  AugmentSpec augment;
  augment.hflip = FlipChance{0.5};
  augment.random_crop_padding = 2;
  std::vector<int64_t> order;
  for (int64_t copy = 0; copy < 4; ++copy) order.push_back(5 | (copy << kCopyShift));
  LoaderOptions o = options(0, &augment);
  o.batch_size = 4;
  BatchLoader loader(data, order, o);
  const Batch batch = *loader.next();
  for (int64_t i = 0; i < 4; ++i) CHECK(batch.targets[i].item<int64_t>() == 5 % 3);
  int distinct = 0;
  for (int64_t i = 1; i < 4; ++i) distinct += batch.images[i].equal(batch.images[0]) ? 0 : 1;
  CHECK(distinct >= 2);  // padding offsets and flips drawn per copy
  LoaderOptions plain = options(0, &augment);
  plain.batch_size = 1;
  BatchLoader single(data, {5}, plain);
  CHECK(single.next()->images[0].equal(batch.images[0]));  // copy 0 draws as the plain sample
}

TEST_CASE("random erasing reaches the device batch after normalisation, planned per sample", "[data]") {
  CountingDataset data(16);
  AugmentSpec augment;
  augment.random_erasing.prob = 1.0;
  augment.random_erasing.mode = EraseMode::kConst;
  augment.random_erasing.min_area = 0.1;
  LoaderOptions o = options(0, &augment);
  BatchLoader loader(data, reversed(16), o);
  FeedOptions feed;
  feed.mean = {0.5};
  feed.std = {0.25};
  feed.erase_mode = EraseMode::kConst;
  DeviceFeeder feeder(loader, feed);
  const DeviceBatch batch = *feeder.next();
  // Every sample erased: some pixels exactly 0 after normalising (a uint8 value cannot give 0 here).
  for (int64_t i = 0; i < 8; ++i) CHECK(batch.images[i].eq(0).sum().item<int64_t>() >= 1);
  BatchLoader plain_loader(data, reversed(16), options(0, nullptr));
  DeviceFeeder plain(plain_loader, feed);
  CHECK(plain.next()->images.eq(0).sum().item<int64_t>() == 0);
}

TEST_CASE("workers that normalise on the host hand the feeder the batch it would have made, bit for bit", "[data]") {
  ColourDataset data;
  for (const auto& [channels_last, side] : {std::pair{false, 16}, std::pair{false, 13}, std::pair{true, 16}}) {  // 13: a vector loop's tail
    FeedOptions feed;
    feed.mean = {0.485, 0.456, 0.406};
    feed.std = {0.229, 0.224, 0.225};
    feed.channels_last = channels_last;
    LoaderOptions o = options(2, nullptr);
    o.transform.image_size = side;
    BatchLoader uint8_loader(data, reversed(24), o);
    DeviceFeeder on_consumer(uint8_loader, feed);
    o.normalize = host_normalize(feed);
    REQUIRE(o.normalize);
    BatchLoader float_loader(data, reversed(24), o);
    CHECK(float_loader.next()->images.scalar_type() == at::kFloat);
    BatchLoader again(data, reversed(24), o);
    DeviceFeeder in_workers(again, feed);
    for (int b = 0; b < 3; ++b) {
      const DeviceBatch expected = *on_consumer.next(), got = *in_workers.next();
      CHECK(got.images.equal(expected.images));
      CHECK(got.images.is_contiguous(channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous));
      CHECK(got.targets.equal(expected.targets));
    }
  }
  FeedOptions on_gpu;
  on_gpu.device = c10::Device(c10::kCUDA, 0);
  CHECK_FALSE(host_normalize(on_gpu));  // there the batch travels as uint8
}

TEST_CASE("erasing in the workers fills exactly the planned boxes, keyed by the sample, not its batch", "[data]") {
  ColourDataset data;
  AugmentSpec augment;
  augment.random_erasing.prob = 0.5;
  augment.random_erasing.min_area = 0.1;
  for (EraseMode mode : {EraseMode::kConst, EraseMode::kRand, EraseMode::kPixel}) {
    FeedOptions feed;
    feed.mean = {0.5, 0.5, 0.5};
    feed.std = {0.25, 0.25, 0.25};
    feed.erase_mode = mode;
    augment.random_erasing.mode = mode;
    LoaderOptions o = options(1, &augment);
    o.transform.image_size = 16;
    o.normalize = host_normalize(feed);
    BatchLoader erased_loader(data, reversed(24), o);
    LoaderOptions plain_options = o;
    plain_options.transform.augment = nullptr;
    BatchLoader plain_loader(data, reversed(24), plain_options);
    o.batch_size = 3;  // the same samples in other batches
    BatchLoader regrouped(data, reversed(24), o);
    const at::Tensor erased = erased_loader.next()->images, plain = plain_loader.next()->images;
    const at::Tensor first_three = regrouped.next()->images;
    CHECK(first_three.equal(erased.narrow(0, 0, 3)));
    int64_t erased_samples = 0;
    for (int64_t i = 0; i < 8; ++i) {
      const at::Tensor changed = erased[i].ne(plain[i]).any(0);  // [H, W]
      if (changed.sum().item<int64_t>() == 0) continue;
      ++erased_samples;
      // The changed pixels form the planned box: a filled rectangle.
      const at::Tensor rows = changed.any(1).nonzero(), cols = changed.any(0).nonzero();
      const int64_t top = rows.min().item<int64_t>(), height = rows.max().item<int64_t>() - top + 1;
      const int64_t left = cols.min().item<int64_t>(), width = cols.max().item<int64_t>() - left + 1;
      CHECK(changed.sum().item<int64_t>() == height * width);
      const at::Tensor box = erased[i].narrow(1, top, height).narrow(2, left, width);
      if (mode == EraseMode::kConst) CHECK(box.abs().max().item<float>() == 0.0f);
      if (mode == EraseMode::kRand) CHECK(box.std({1, 2}).max().item<float>() == 0.0f);
      if (mode == EraseMode::kPixel) CHECK(box.std().item<float>() > 0.3f);
    }
    CHECK(erased_samples >= 1);
    CHECK(erased_samples <= 7);
  }
}
