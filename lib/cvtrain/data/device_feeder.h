// Model input on the device from loader batches: uint8 NHWC batches are copied on a dedicated
// CUDA stream (ordered with an event, so the copy of the next batch overlaps this step's compute),
// the samples left encoded decoded there (data.decoder nvjpeg), then converted on the device to float or bf16, normalised, and laid out channels_last for
// CNNs. On CPU the same path runs without the copy.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace cvtrain {

class BatchLoader;
class DeviceDecode;
enum class EraseMode;
struct StagedBatch;  // device_feeder.cpp

struct FeedOptions {
  c10::Device device = c10::Device(c10::kCPU);
  at::ScalarType dtype = at::kFloat;  // kFloat or kBFloat16
  bool channels_last = false;         // NHWC strides, which cuDNN and oneDNN convolutions prefer
  std::vector<double> mean, std;      // per channel, on the 0..1 scale
  EraseMode erase_mode{};              // how the batches' random-erasing boxes are filled (after normalising)
};

struct DeviceBatch {
  at::Tensor images;  // [B, C, H, W] on the device, normalised
  at::Tensor targets;  // on the device: int64 [B] class labels, or uint8 [B, H, W] masks
  int64_t first_sample = 0;
};

// Where the trainer's batches come from: decoded images (DeviceFeeder) or synthetic ones.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // The next batch on the device, or nullopt after the last.
  virtual std::optional<DeviceBatch> next() = 0;
  // Called inside next() when the host batch has arrived, before it is copied and normalised:
  // the step breakdown tells waiting for data from moving it.
  void on_arrival(std::function<void()> hook) { arrival_ = std::move(hook); }

 protected:
  void arrived() const {
    if (arrival_) arrival_();
  }

 private:
  std::function<void()> arrival_;
};

class DeviceFeeder : public BatchSource {
 public:
  // With `decode`, the samples the loader left encoded are decoded on the device before the batch is
  // normalised: on the copy stream (overlapping the step running) and one batch ahead on a thread
  // of the feeder's own (keeping the decoder's host work off the caller's thread).
  DeviceFeeder(BatchLoader& loader, FeedOptions options, DeviceDecode* decode = nullptr);
  ~DeviceFeeder() override;
  // The next batch on the device, or nullopt after the last; rethrows the loader's errors.
  std::optional<DeviceBatch> next() override;

 private:
  struct CopyStream;   // CUDA stream and event; defined where CUDA headers are included
  struct DecodeAhead;  // the decode thread
  std::optional<StagedBatch> stage_next(bool on_caller_thread);
  BatchLoader& loader_;
  FeedOptions options_;
  DeviceDecode* decode_;
  at::Tensor mean_, inv_std_;  // [1, C, 1, 1] on the device, scaled for 0..255 input
  std::unique_ptr<CopyStream> copy_;
  std::unique_ptr<DecodeAhead> ahead_;  // last: its thread reads the members above
};

// Whether page-locked host batches pay off: only when copies go to a CUDA device.
bool wants_pinned_memory(const c10::Device& device);

}  // namespace cvtrain
