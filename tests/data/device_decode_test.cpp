// data.decoder nvjpeg's path without a GPU: the loader leaves the JPEGs a batch decoder takes
// encoded with the CPU's own crop plans, DeviceDecode renders them into the batch, and a batch the
// decoder rejects comes out of the CPU path bit for bit, bad samples and labels included. A host
// decoder stands in for nvJPEG (scripts/gpu_check.sh runs the real one).
#include "torch_catch.h"

#include <ATen/ATen.h>

#include <cmath>
#include <functional>

#include "cvtrain/core/error.h"
#include "cvtrain/data/batch_loader.h"
#include "cvtrain/data/decoder_choice.h"
#include "cvtrain/data/device_decode.h"
#include "cvtrain/data/device_feeder.h"
#include "cvtrain/data/idx_dataset.h"
#include "cvtrain/data/image_decode.h"
#include "cvtrain/data/image_folder.h"
#include "cvtrain/data/jpeg_batch_decoder.h"
#include "cvtrain/data/jpeg_coding.h"
#include "cvtrain/data/sampler.h"
#include "cvtrain/comm/communicator.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/train/evaluator.h"
#include "image_files.h"

using namespace cvtrain;
using cvtrain::testing::encode_jpeg_pixels;
using cvtrain::testing::encode_png;
using cvtrain::testing::TempDir;
using cvtrain::testing::write_bytes;

namespace {

// nvJPEG's contract on the host: takes what gpu_decodable allows, decodes files to RGB, with
// `regions` only from the 16-pixel block corner before each region on (as nvJPEG's ROI), refuses
// the files `refuse` names within the batch (as the hardware engine asked per file), and throws
// for the whole batch when one file fails.
class HostJpegDecoder : public JpegBatchDecoder {
 public:
  explicit HostJpegDecoder(bool regions = false, std::function<bool(const JpegCoding&)> refuse = {})
      : regions_(regions), refuse_(std::move(refuse)) {}
  bool takes(const std::vector<uint8_t>& bytes) const override {
    const auto coding = jpeg_coding(bytes);
    return coding && gpu_decodable(*coding);
  }
  std::vector<DeviceWindow> decode(const std::vector<const std::vector<uint8_t>*>& files, const std::vector<PixelRect>& regions) override {
    ++batches;
    std::vector<DeviceWindow> out;
    for (size_t i = 0; i < files.size(); ++i) {
      if (refuse_ && refuse_(*jpeg_coding(*files[i]))) {
        out.push_back(DeviceWindow{});
        continue;
      }
      const Image image = decode_image(*files[i], "a file in the batch", {}, JpegChroma::replicated);
      at::Tensor pixels = at::from_blob(const_cast<uint8_t*>(image.pixels.data()), {image.height, image.width, 3}, at::kByte).clone();
      const PixelRect& r = regions[i];
      if (!regions_ || r.width == 0) {
        out.push_back(DeviceWindow{pixels, 0, 0});
        continue;
      }
      const int x = r.x / 16 * 16, y = r.y / 16 * 16;
      out.push_back(DeviceWindow{pixels.narrow(0, y, r.y + r.height - y).narrow(1, x, r.x + r.width - x).clone(), x, y});
    }
    return out;
  }
  int batches = 0;

 private:
  bool regions_;
  std::function<bool(const JpegCoding&)> refuse_;
};

// Photo-like pixels (smooth shading, some texture), so that resampling differences are realistic.
std::vector<uint8_t> photo(int w, int h, int seed) {
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) {
        const double v = 128 + 60 * std::sin(0.031 * x + 0.7 * c + seed) * std::cos(0.023 * y) + 20 * std::sin(0.37 * x * (c + 1));
        rgb[(static_cast<size_t>(y) * w + x) * 3 + c] = static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
      }
  return rgb;
}

// 16 baseline JPEGs of several sizes, one progressive JPEG and one PNG in two classes; with
// `truncated`, one baseline file cut short after its headers.
void write_mixed_folder(const TempDir& dir, bool truncated = false) {
  for (int i = 0; i < 16; ++i) {
    const int w = 120 + 13 * i, h = 96 + 9 * i;
    write_bytes(dir, "root/c" + std::to_string(i % 2) + "/" + std::to_string(i) + ".jpg", encode_jpeg_pixels(photo(w, h, i), w, h, TJPF_RGB, 90));
  }
  write_bytes(dir, "root/c0/progressive.jpg", encode_jpeg_pixels(photo(150, 110, 3), 150, 110, TJPF_RGB, 90, TJSAMP_420, TJFLAG_PROGRESSIVE));
  write_bytes(dir, "root/c1/plain.png", encode_png(photo(90, 100, 5), 90, 100, 2, 8));
  if (truncated) {
    std::vector<uint8_t> cut = encode_jpeg_pixels(photo(200, 160, 9), 200, 160, TJPF_RGB, 90);
    cut.resize(700);
    write_bytes(dir, "root/c1/cut.jpg", cut);
  }
}

struct Setup {
  AugmentSpec augment;
  LoaderOptions options;
  Setup() {
    augment.random_resized_crop = {0.08, 1.0};
    augment.hflip = FlipChance{0.5};
    options.batch_size = 5;  // every batch holds two baseline JPEGs or more
    options.workers = 2;
    options.transform = SampleTransform{&augment, 48, 5, 1};
  }
};

FeedOptions cpu_feed() {
  FeedOptions feed;
  feed.mean = {0, 0, 0};
  feed.std = {1.0 / 255, 1.0 / 255, 1.0 / 255};  // the batch stays in 0..255 levels
  return feed;
}

// Every batch of one epoch through the feeder, with or without the device decoder.
std::vector<DeviceBatch> epoch_batches(const Dataset& data, LoaderOptions options, JpegBatchDecoder* decoder, BadSamples* bad,
                                       int64_t* device_decoded = nullptr, int64_t* host_decoded = nullptr) {
  options.bad_samples = bad;
  if (decoder) options.keep_encoded = [decoder](const std::vector<uint8_t>& bytes) { return decoder->takes(bytes); };
  BatchLoader loader(data, epoch_order(5, 1, data.size()), options);
  std::unique_ptr<DeviceDecode> decode;
  if (decoder) decode = std::make_unique<DeviceDecode>(*decoder, data, options.transform, bad);
  DeviceFeeder feeder(loader, cpu_feed(), decode.get());
  std::vector<DeviceBatch> out;
  while (auto b = feeder.next()) out.push_back(*b);
  if (device_decoded) *device_decoded = decode ? decode->device_decoded() : 0;
  if (host_decoded) *host_decoded = decode ? decode->host_decoded() : 0;
  return out;
}

}  // namespace

TEST_CASE("the loader leaves the JPEGs the decoder takes encoded, planned as the CPU path plans them", "[data]") {
  TempDir dir;
  write_mixed_folder(dir);
  const ImageFolderDataset data(dir.file("root"), 0);
  Setup s;
  HostJpegDecoder decoder;
  LoaderOptions keeping = s.options;
  keeping.keep_encoded = [&](const std::vector<uint8_t>& bytes) { return decoder.takes(bytes); };
  BatchLoader cpu(data, epoch_order(5, 1, data.size()), s.options), kept(data, epoch_order(5, 1, data.size()), keeping);
  int64_t encoded = 0;
  while (auto reference = cpu.next()) {
    const std::optional<Batch> batch = kept.next();
    REQUIRE(batch);
    CHECK(at::equal(batch->targets, reference->targets));
    std::vector<bool> is_encoded(static_cast<size_t>(reference->images.size(0)), false);
    for (const EncodedSample& sample : batch->encoded) {
      is_encoded[static_cast<size_t>(sample.slot)] = true;
      const auto size = jpeg_size(sample.bytes, "sample");
      REQUIRE(size);
      const CropPlan plan = plan_sample(*size, s.options.transform, sample.draw);
      CHECK((plan.x == sample.plan.x && plan.y == sample.plan.y && plan.width == sample.plan.width && plan.height == sample.plan.height));
      CHECK(plan.flip == sample.plan.flip);
      CHECK(data.describe(sample.index).find(".jpg") != std::string::npos);
    }
    for (size_t i = 0; i < is_encoded.size(); ++i)
      if (!is_encoded[i]) CHECK(at::equal(batch->images[static_cast<int64_t>(i)], reference->images[static_cast<int64_t>(i)]));
    encoded += static_cast<int64_t>(batch->encoded.size());
  }
  CHECK(encoded == 16);  // the baseline JPEGs; the progressive one and the PNG were decoded by the workers
}

TEST_CASE("a batch decoded by the device decoder has the CPU batch's samples, labels and flips, within the filters' difference", "[data]") {
  TempDir dir;
  write_mixed_folder(dir);
  const ImageFolderDataset data(dir.file("root"), 0);
  Setup s;
  HostJpegDecoder decoder, region_decoder(/*regions=*/true);
  BadSamples bad_cpu("cpu", data.size(), 0.5), bad_device("device", data.size(), 0.5);
  int64_t device_decoded = 0;
  const std::vector<DeviceBatch> cpu = epoch_batches(data, s.options, nullptr, &bad_cpu);
  const std::vector<DeviceBatch> device = epoch_batches(data, s.options, &decoder, &bad_device, &device_decoded);
  // Decoding only each crop's region (from the block corner before it, as nvJPEG's ROI) changes nothing.
  const std::vector<DeviceBatch> regional = epoch_batches(data, s.options, &region_decoder, &bad_device);
  REQUIRE(cpu.size() == device.size());
  REQUIRE(regional.size() == device.size());
  for (size_t b = 0; b < device.size(); ++b) CHECK(at::equal(regional[b].images, device[b].images));
  CHECK(device_decoded == 16);
  CHECK(decoder.batches == static_cast<int>(cpu.size()));
  double total = 0;
  int64_t samples = 0;
  for (size_t b = 0; b < cpu.size(); ++b) {
    CHECK(at::equal(cpu[b].targets, device[b].targets));
    for (int64_t i = 0; i < cpu[b].images.size(0); ++i) {
      const double gap = (cpu[b].images[i] - device[b].images[i]).abs().mean().item<double>();
      CHECK(gap < 10.0);
      total += gap;
      ++samples;
    }
  }
  // Measured on these files: 4.3 levels a pixel on average, of which the CPU path's own shortcuts
  // (DCT-scaled decode, replicated chroma) make 5.3 against a full decode and the filters 1.4 on the
  // same decode; the same render with the flip wrong is 30 levels off.
  CHECK(total / static_cast<double>(samples) < 6.0);
  CHECK(bad_device.count() == 0);
}

TEST_CASE("a batch the device decoder rejects comes out of the CPU path bit for bit, its bad sample replaced", "[data]") {
  TempDir dir;
  write_mixed_folder(dir, /*truncated=*/true);
  const ImageFolderDataset data(dir.file("root"), 0);
  Setup s;
  HostJpegDecoder decoder;
  REQUIRE(decoder.takes(read_file_bytes(dir.file("root/c1/cut.jpg"))));  // its header passes: only decoding finds it broken
  BadSamples bad_cpu("cpu", data.size(), 0.5), bad_device("device", data.size(), 0.5);
  const std::vector<DeviceBatch> cpu = epoch_batches(data, s.options, nullptr, &bad_cpu);
  int64_t device_decoded = 0, host_decoded = 0;
  const std::vector<DeviceBatch> device = epoch_batches(data, s.options, &decoder, &bad_device, &device_decoded, &host_decoded);
  REQUIRE(cpu.size() == device.size());
  CHECK(host_decoded >= 1);
  CHECK(device_decoded + host_decoded == 17);  // the 16 good baseline files and the cut one were all left to the device
  CHECK(bad_cpu.count() == 1);
  CHECK(bad_device.count() == 1);
  int identical_batches = 0;
  for (size_t b = 0; b < cpu.size(); ++b) {
    CHECK(at::equal(cpu[b].targets, device[b].targets));
    if (at::equal(cpu[b].images, device[b].images)) ++identical_batches;
  }
  CHECK(identical_batches == 1);  // the batch holding the cut file; the others were rendered on the "device"
}

TEST_CASE("files the device decoder refuses within a batch come out of the CPU path bit for bit, the rest from the device", "[data]") {
  TempDir dir;
  write_mixed_folder(dir);
  const ImageFolderDataset data(dir.file("root"), 0);
  Setup s;
  const auto wide = [](const JpegCoding& c) { return c.width >= 250; };  // files 10 to 15 (120 + 13 i pixels wide)
  HostJpegDecoder everything, refusing_wide(/*regions=*/false, wide);
  BadSamples bad_cpu("cpu", data.size(), 0.5), bad_all("all", data.size(), 0.5), bad_some("some", data.size(), 0.5);
  const std::vector<DeviceBatch> cpu = epoch_batches(data, s.options, nullptr, &bad_cpu);
  const std::vector<DeviceBatch> all = epoch_batches(data, s.options, &everything, &bad_all);
  int64_t device_decoded = 0, host_decoded = 0;
  const std::vector<DeviceBatch> some = epoch_batches(data, s.options, &refusing_wide, &bad_some, &device_decoded, &host_decoded);
  CHECK(device_decoded == 10);
  CHECK(host_decoded == 6);
  CHECK(refusing_wide.batches == static_cast<int>(cpu.size()));  // no batch fell back whole
  REQUIRE(some.size() == cpu.size());
  int64_t from_cpu = 0, from_device = 0;
  for (size_t b = 0; b < cpu.size(); ++b) {
    CHECK(at::equal(cpu[b].targets, some[b].targets));
    for (int64_t i = 0; i < cpu[b].images.size(0); ++i) {
      const bool as_cpu = at::equal(some[b].images[i], cpu[b].images[i]), as_device = at::equal(some[b].images[i], all[b].images[i]);
      CHECK((as_cpu || as_device));
      if (as_cpu && !as_device) ++from_cpu;
      if (as_device && !as_cpu) ++from_device;
    }
  }
  CHECK(from_cpu == 6);  // the refused files, and not one more
  CHECK(from_device == 10);
  CHECK(bad_some.count() == 0);
}

TEST_CASE("data.decoder auto keeps the CPU where nvJPEG cannot serve and says why, and nvjpeg there is an error", "[data]") {
  TempDir dir;
  write_mixed_folder(dir);
  const ImageFolderDataset data(dir.file("root"), 0);
  Setup s;
  const c10::Device cpu(c10::kCPU);
  CHECK(choose_decoder(DecoderKind::kCpu, DataFormat::kImageFolder, data, s.options.transform, cpu).summary == "data.decoder: cpu");
  const DecoderChoice automatic = choose_decoder(DecoderKind::kAuto, DataFormat::kImageFolder, data, s.options.transform, cpu);
  CHECK_FALSE(automatic.device);
  CHECK_THAT(automatic.summary, Catch::Contains("data.decoder auto: cpu") &&
                                    Catch::Contains("CUDA device"));
  CHECK_THROWS_WITH(choose_decoder(DecoderKind::kNvjpeg, DataFormat::kImageFolder, data, s.options.transform, cpu),
                    Catch::StartsWith("data.decoder nvjpeg: nvJPEG decodes on a CUDA device"));
  s.augment.color_jitter = 0.4;
  CHECK_THAT(device_decode_obstacle(DataFormat::kImageFolder, data, s.options.transform, c10::Device(c10::kCUDA, 0)),
             Catch::Contains("color_jitter"));
  s.augment.color_jitter = 0;
  CHECK(device_decode_obstacle(DataFormat::kImageFolder, data, s.options.transform, c10::Device(c10::kCUDA, 0)).empty());
  CHECK_THAT(device_decode_obstacle(DataFormat::kShards, data, s.options.transform, cpu), Catch::Contains("CUDA"));
  CHECK_THAT(device_decode_obstacle(DataFormat::kIdx, data, s.options.transform, cpu),
             Catch::Contains("data.format idx holds no JPEG files"));
}


// The trainer hands its (training) loader settings to the evaluation, keep_encoded included: the
// centre view must still be the CPU's decode, or the feeder would meet files nobody decodes.
TEST_CASE("evaluation decodes on the CPU even when the training loader leaves JPEGs to the device", "[data]") {
  TempDir dir;
  write_mixed_folder(dir);
  const ImageFolderDataset data(dir.file("root"), 0);
  Setup s;
  HostJpegDecoder decoder;
  torch::manual_seed(0);
  ModelSpec spec;
  spec.arch = "mlp";
  spec.image_size = 48;
  spec.num_classes = 2;
  const std::shared_ptr<Classifier> model = build_model(spec, 3);
  const auto communicator = single_process_communicator();
  LoaderOptions keeping = s.options;
  keeping.keep_encoded = [&](const std::vector<uint8_t>& bytes) { return decoder.takes(bytes); };
  const EvalResult plain = evaluate(*model, data, s.options, cpu_feed(), PrecisionPolicy{Precision::kFp32}, *communicator, 2);
  const EvalResult kept = evaluate(*model, data, keeping, cpu_feed(), PrecisionPolicy{Precision::kFp32}, *communicator, 2);
  CHECK(kept.samples == 18);
  CHECK(kept.loss == plain.loss);
  CHECK(kept.top1 == plain.top1);
  CHECK(decoder.batches == 0);
  // The per-class counts: every sample once, the hits the top-1's, the confusion matrix's diagonal the hits.
  const ClassCounts& c = plain.per_class;
  REQUIRE(c.samples.size() == 2);
  CHECK(c.samples[0] + c.samples[1] == 18);
  CHECK((c.hits[0] + c.hits[1]) / 18 == Approx(plain.top1));
  REQUIRE(c.outputs == 2);
  CHECK(c.confusion[0] == c.hits[0]);
  CHECK(c.confusion[3] == c.hits[1]);
  CHECK(c.confusion[0] + c.confusion[1] == c.samples[0]);
}
