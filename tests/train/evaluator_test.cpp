// The evaluator on two in-process ranks (two_ranks.h): every rank returns the figures of one
// process over the whole set, each sample counted once even when the ranks' shares differ in size.
#include "torch_catch.h"

#include <ATen/ATen.h>

#include "cvtrain/comm/communicator.h"
#include "cvtrain/data/batch_loader.h"
#include "cvtrain/data/dataset.h"
#include "cvtrain/data/device_feeder.h"
#include "cvtrain/train/evaluator.h"
#include "mlp_replica.h"
#include "two_ranks.h"

using namespace cvtrain;

namespace {

// 8x8 gray images whose pixels follow from the sample index; labels cycle through 4 classes.
class PatternSet : public Dataset {
 public:
  explicit PatternSet(size_t n) : n_(n) {}
  size_t size() const override { return n_; }
  int64_t label(size_t index) const override { return static_cast<int64_t>(index % 4); }
  int64_t num_classes() const override { return 4; }
  int channels() const override { return 1; }
  RawSample read(size_t index) const override {
    Image image{std::vector<uint8_t>(64), 8, 8, 1};
    for (size_t p = 0; p < 64; ++p) image.pixels[p] = static_cast<uint8_t>((index * 37 + p * 11 + (p * p) % 13) % 256);
    return RawSample{{}, image};
  }
  std::string describe(size_t index) const override { return "pattern " + std::to_string(index); }

 private:
  size_t n_;
};

// One image per forward pass: a sample's logits then come from the same one-row product whichever
// rank computes it, so its loss is the same float on one rank or two. Summed in double, 7 such
// losses (each above 2^-10, under 2^4) need at most 24 + 14 + 3 bits and add exactly in any
// order: the figures must be equal, not close.
LoaderOptions one_at_a_time() {
  LoaderOptions loader;
  loader.batch_size = 1;
  loader.transform.image_size = 8;
  return loader;
}

FeedOptions on_cpu() {
  FeedOptions feed;
  feed.mean = {0.5};
  feed.std = {0.25};
  return feed;
}

}  // namespace

TEST_CASE("two ranks evaluate every sample once and return one process's figures", "[train]") {
  const PatternSet set(7);  // odd: rank 0 takes 4 samples, rank 1 three
  auto alone = single_process_communicator();
  const EvalResult one = evaluate(*cvtrain::testing::seeded_mlp(), set, one_at_a_time(), on_cpu(), PrecisionPolicy{}, *alone, 4);
  REQUIRE(one.samples == 7);
  REQUIRE(one.loss > 0x1p-10);  // the exactness argument above needs losses of this size
  REQUIRE(one.loss < 16);

  std::vector<std::shared_ptr<Classifier>> models{cvtrain::testing::seeded_mlp(), cvtrain::testing::seeded_mlp()};
  std::vector<EvalResult> two(2);
  cvtrain::testing::on_two_ranks([&](Communicator& comm) {
    const auto rank = static_cast<size_t>(comm.rank());
    two[rank] = evaluate(*models[rank], set, one_at_a_time(), on_cpu(), PrecisionPolicy{}, comm, 4);
  });
  for (const EvalResult& r : two) {
    CHECK(r.samples == 7);
    CHECK(r.loss == one.loss);
    CHECK(r.top1 == one.top1);
    CHECK(r.top5 == one.top5);
    CHECK(r.per_class.samples == std::vector<double>{2, 2, 2, 1});  // labels 0..3, 0..2 of 7 samples
    CHECK(r.per_class.samples == one.per_class.samples);
    CHECK(r.per_class.hits == one.per_class.hits);
    CHECK(r.per_class.confusion == one.per_class.confusion);
  }
}
