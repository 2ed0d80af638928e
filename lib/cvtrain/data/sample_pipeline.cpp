// Reading, scaled decoding and augmentation of one sample, plus the bad-sample ledger.
#include "cvtrain/data/sample_pipeline.h"

#include <fmt/format.h>

#include <chrono>

#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/data/image_decode.h"
#include "cvtrain/data/image_header.h"
#include "cvtrain/data/image_views.h"
#include "cvtrain/data/jpeg_coding.h"

namespace cvtrain {
namespace {

constexpr size_t kReasonsShown = 3;

int64_t nanoseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
}

void add_timings(InputTimings* timings, std::chrono::steady_clock::time_point started, int64_t read_ns) {
  if (!timings) return;
  timings->read_ns.fetch_add(read_ns, std::memory_order_relaxed);
  timings->decode_ns.fetch_add(nanoseconds_since(started) - read_ns, std::memory_order_relaxed);
  timings->samples.fetch_add(1, std::memory_order_relaxed);
}

// A walk over the JPEG's header segments to its frame header: microseconds against a decode's milliseconds.
bool is_progressive(const std::vector<uint8_t>& jpeg) {
  const auto coding = jpeg_coding(jpeg);
  return coding && coding->progressive;
}

// Decodes and transforms sample `source` into `out`; or, where `keep` takes the JPEG, only plans it
// into `kept`. Returns whether it was kept.
bool decode_and_transform(const Dataset& dataset, size_t source, const SampleTransform& t, size_t key, uint8_t* out,
                          InputTimings* timings, const KeepEncoded* keep, std::optional<EncodedSample>* kept) {
  const auto started = std::chrono::steady_clock::now();
  RawSample raw = dataset.read(source);
  const int64_t read_ns = nanoseconds_since(started);
  const std::string name = dataset.describe(source);
  ImageWindow window;
  ImageSize size;
  CropPlan plan;
  if (const auto jpeg = raw.has_pixels() ? std::nullopt : jpeg_size(raw.encoded, name)) {
    // JPEG: plan on the header's size, then decode only what the plan needs, at the scale and chroma
    // its view takes (image_views.h).
    size = *jpeg;
    check_image_pixels(size, t.max_image_pixels, name);
    plan = plan_sample(size, t, key);
    if (keep && dataset.channels() == 3 && (*keep)(raw.encoded)) {
      *kept = EncodedSample{source, key, std::move(raw.encoded), plan, 0};
      add_timings(timings, started, read_ns);
      return true;
    }
    const bool center_view = plan.resized_width > 0;
    const ViewDecode decode = view_decode(center_view ? ImageView::classification_center : ImageView::classification_crop);
    const int side = static_cast<int>(t.image_size);
    const ImageSize out = center_view ? ImageSize{plan.resized_width, plan.resized_height} : ImageSize{side, side};
    window = decode_jpeg_window(raw.encoded, name, view_jpeg_scale(decode.scaling, size, ImageSize{plan.width, plan.height}, out),
                                PixelRect{plan.x, plan.y, plan.width, plan.height}, decode.chroma);
    if (timings && is_progressive(raw.encoded)) timings->progressive.fetch_add(1, std::memory_order_relaxed);
  } else {
    // Other formats: refused on the header's size where it tells one, before a decode allocates it.
    if (const auto header = raw.has_pixels() ? std::nullopt : image_header_size(raw.encoded))
      check_image_pixels(*header, t.max_image_pixels, name);
    Image image = raw.has_pixels() ? std::move(raw.image) : decode_view(raw.encoded, name, ImageView::classification_crop);  // not a JPEG
    size = ImageSize{image.width, image.height};
    check_image_pixels(size, t.max_image_pixels, name);
    plan = plan_sample(size, t, key);
    window = ImageWindow{std::move(image), size, 0, 0};
  }
  if (window.image.channels != dataset.channels())
    throw Error(fmt::format("{}: has {} channel(s), the dataset {}", name, window.image.channels, dataset.channels()));
  render_sample(window, size, plan, t, out);
  add_timings(timings, started, read_ns);
  return false;
}

// The first usable sample from `index` on (see prepare_sample), decoded into `out` or kept.
size_t prepare_usable_sample(const Dataset& dataset, size_t index, const SampleTransform& t, BadSamples* bad, uint8_t* out,
                             InputTimings* timings, uint64_t draw, const KeepEncoded* keep, std::optional<EncodedSample>* kept) {
  const size_t key = draw == kDrawByIndex ? index : static_cast<size_t>(draw);
  if (!bad) {
    decode_and_transform(dataset, index, t, key, out, timings, keep, kept);
    return index;
  }
  const size_t n = dataset.size();
  for (size_t step = 0; step < n; ++step) {
    const size_t source = (index + step) % n;
    try {
      decode_and_transform(dataset, source, t, key, out, timings, keep, kept);
      return source;
    } catch (const Error& e) {
      bad->record(source, e.what());
    }
  }
  throw Error(fmt::format("no sample of {} could be read", dataset.describe(index)));
}

}  // namespace

BadSamples::BadSamples(std::string what, size_t dataset_size, double max_fraction)
    : what_(std::move(what)), dataset_size_(dataset_size), max_fraction_(max_fraction) {}

void BadSamples::record(size_t index, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!bad_.emplace(index, reason).second) return;
  log::warn("{}: skipping unusable sample: {}", what_, reason);
  if (bad_.size() <= kReasonsShown) first_reasons_ += fmt::format("\n  {}", reason);
  const double fraction = static_cast<double>(bad_.size()) / static_cast<double>(dataset_size_);
  if (fraction > max_fraction_)
    throw Error(fmt::format("{}: {} of {} samples ({:.2f}%) could not be read, more than data.max_bad_fraction {}; "
                            "fix or remove them, or raise the limit. First ones:{}",
                            what_, bad_.size(), dataset_size_, 100 * fraction, max_fraction_, first_reasons_));
}

bool BadSamples::contains(size_t index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bad_.count(index) > 0;
}

size_t BadSamples::count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bad_.size();
}

std::string BadSamples::reason(size_t index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = bad_.find(index);
  return found == bad_.end() ? std::string() : found->second;
}

size_t prepare_sample(const Dataset& dataset, size_t index, const SampleTransform& t, BadSamples* bad, uint8_t* out,
                      InputTimings* timings, uint64_t draw) {
  return prepare_usable_sample(dataset, index, t, bad, out, timings, draw, nullptr, nullptr);
}

size_t prepare_or_keep_sample(const Dataset& dataset, size_t index, const SampleTransform& t, BadSamples* bad, uint8_t* out,
                              InputTimings* timings, uint64_t draw, const KeepEncoded& keep, std::optional<EncodedSample>& kept) {
  kept.reset();
  return prepare_usable_sample(dataset, index, t, bad, out, timings, draw, keep ? &keep : nullptr, &kept);
}

Image prepare_sample(const Dataset& dataset, size_t index, const SampleTransform& t, BadSamples* bad) {
  const int side = static_cast<int>(t.image_size);
  Image image{std::vector<uint8_t>(static_cast<size_t>(side) * side * dataset.channels()), side, side, dataset.channels()};
  prepare_sample(dataset, index, t, bad, image.pixels.data());
  return image;
}

}  // namespace cvtrain
