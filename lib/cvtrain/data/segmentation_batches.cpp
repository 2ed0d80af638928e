// Pairs decoded and transformed sample by sample into one batch; every decision keyed by the
// sample's entry (core/rng.h), so batches do not depend on the workers or the world size.
#include "cvtrain/data/segmentation_batches.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "cvtrain/core/error.h"
#include "cvtrain/core/rng.h"
#include "cvtrain/core/timer.h"
#include "cvtrain/data/image_decode.h"
#include "cvtrain/data/image_views.h"
#include "cvtrain/data/resample.h"
#include "cvtrain/data/sampler.h"

namespace cvtrain {

SegmentationBatches::SegmentationBatches(const SegmentationDataset& dataset, SegmentationView view, InputTimings* timings)
    : dataset_(dataset), view_(std::move(view)), timings_(timings) {}

Batch SegmentationBatches::make(const std::vector<int64_t>& order, int64_t first, int64_t count) {
  return view_.training ? make_training(order, first, count) : make_evaluation(order, first, count);
}

std::pair<Image, LabelMask> SegmentationBatches::load(size_t index) {
  const Stopwatch read_clock;
  const RawSample raw = dataset_.read_image(index);
  const double read_s = read_clock.seconds();
  const Stopwatch decode_clock;
  Image image = decode_view(raw.encoded, dataset_.image_name(index), ImageView::exact);
  LabelMask mask = dataset_.read_mask(index);
  if (mask.width != image.width || mask.height != image.height)
    throw Error(fmt::format("{}: the mask is {}x{}, its image {} is {}x{}; a mask labels its image's pixels one for one",
                            dataset_.mask_name(index), mask.width, mask.height, dataset_.image_name(index), image.width, image.height));
  if (timings_) {
    timings_->read_ns += static_cast<int64_t>(read_s * 1e9);
    timings_->decode_ns += static_cast<int64_t>(decode_clock.seconds() * 1e9);
    ++timings_->samples;
  }
  return {std::move(image), std::move(mask)};
}

Batch SegmentationBatches::make_training(const std::vector<int64_t>& order, int64_t first, int64_t count) {
  const int64_t h = view_.augment.crop_height, w = view_.augment.crop_width;
  Batch batch;
  batch.images = at::empty({count, h, w, 3}, at::kByte);
  batch.targets = at::empty({count, h, w}, at::kByte);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t entry = order[static_cast<size_t>(first + i)];
    const auto [image, mask] = load(static_cast<size_t>(dataset_index(entry)));
    const AugmentedPair pair =
        augment_pair(view_.augment, image, mask, sample_key(view_.seed, static_cast<uint64_t>(view_.epoch), static_cast<uint64_t>(entry)));
    std::copy(pair.image.pixels.begin(), pair.image.pixels.end(), batch.images[i].data_ptr<uint8_t>());
    std::copy(pair.mask.ids.begin(), pair.mask.ids.end(), batch.targets[i].data_ptr<uint8_t>());
  }
  batch.first_sample = count > 0 ? order[static_cast<size_t>(first)] : 0;
  return batch;
}

ImageSize evaluation_size(ImageSize source, const JointAugment& augment) {
  return augment.scale_long > 0 ? rescaled_size(source, augment.scale_long, augment.scale_short, 1.0) : source;
}

void write_fitted(const Image& image, ImageSize fitted, uint8_t* out) {
  if (fitted.width == image.width && fitted.height == image.height) {
    std::copy(image.pixels.begin(), image.pixels.end(), out);
    return;
  }
  const ResampleAxis x = resample_axis(ResizeFilter::kBilinear, image.width, fitted.width, 0, fitted.width);
  const ResampleAxis y = resample_axis(ResizeFilter::kBilinear, image.height, fitted.height, 0, fitted.height);
  resample(image, 0, 0, x, y, out);
}

Batch SegmentationBatches::make_evaluation(const std::vector<int64_t>& order, int64_t first, int64_t count) {
  Batch batch;
  for (int64_t i = 0; i < count; ++i) {
    const auto index = static_cast<size_t>(dataset_index(order[static_cast<size_t>(first + i)]));
    const auto [image, mask] = load(index);
    const ImageSize fitted = evaluation_size({image.width, image.height}, view_.augment);
    if (i == 0) {
      batch.images = at::empty({count, fitted.height, fitted.width, 3}, at::kByte);
      batch.targets = at::empty({count, mask.height, mask.width}, at::kByte);
    } else if (batch.targets.size(1) != mask.height || batch.targets.size(2) != mask.width) {
      throw Error(fmt::format("{}: evaluation batches hold images of one size, and this one is {}x{}", dataset_.image_name(index),
                              mask.width, mask.height));
    }
    write_fitted(image, fitted, batch.images[i].data_ptr<uint8_t>());
    std::copy(mask.ids.begin(), mask.ids.end(), batch.targets[i].data_ptr<uint8_t>());
  }
  batch.first_sample = count > 0 ? order[static_cast<size_t>(first)] : 0;
  return batch;
}

}  // namespace cvtrain
