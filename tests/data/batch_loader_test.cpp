// BatchLoader: identical batches for any number of workers, normalisation, errors in order.
#include "torch_catch.h"

#include <ATen/ATen.h>

#include <numeric>

#include "cvtrain/core/error.h"
#include "cvtrain/data/batch_loader.h"
#include "cvtrain/recipe/recipe.h"

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
  Image load(size_t index) const override {
    if (static_cast<int64_t>(index) == bad_) throw Error(describe(index) + ": corrupt");
    Image image{std::vector<uint8_t>(16), 4, 4, 1};
    for (size_t p = 0; p < 16; ++p) image.pixels[p] = static_cast<uint8_t>((index * 16 + p) % 256);
    return image;
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
  o.mean = {0.5};
  o.std = {0.25};
  o.transform = SampleTransform{augment, 4, 7, 1};
  return o;
}

std::vector<int64_t> reversed(size_t n) {
  std::vector<int64_t> order(n);
  std::iota(order.rbegin(), order.rend(), int64_t{0});
  return order;
}

}  // namespace

TEST_CASE("batches are identical with 0, 1 and 3 workers", "[data]") {
  CountingDataset data(61);
  AugmentSpec augment;
  augment.hflip = true;
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
      CHECK(at::equal(b->labels, reference[i].labels));
      ++i;
    }
    CHECK(i == reference.size());
  }
}

TEST_CASE("batches follow the order and are normalised", "[data]") {
  CountingDataset data(16);
  BatchLoader loader(data, reversed(16), options(2, nullptr));
  const Batch first = *loader.next();
  REQUIRE(first.images.sizes() == at::IntArrayRef({8, 1, 4, 4}));
  CHECK(first.labels[0].item<int64_t>() == 15 % 3);
  // Sample 15, pixel 0 is (15*16) % 256 = 240: (240/255 - 0.5) / 0.25.
  CHECK(first.images[0][0][0][0].item<float>() == Approx((240.0 / 255.0 - 0.5) / 0.25));
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
  LoaderOptions o = options(0, nullptr);
  o.mean = {0.485, 0.456, 0.406};
  o.std = {0.229, 0.224, 0.225};
  CHECK_THROWS_WITH(BatchLoader(data, reversed(8), o), Catch::Contains("data.mean") && Catch::Contains("1 channel"));
}
