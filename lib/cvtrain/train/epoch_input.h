// This rank's batches of one epoch: its share of the epoch's sample order (resuming mid-epoch
// skips the global batches already done), decoded by the loader's threads (or, data.decoder
// nvjpeg, by nvJPEG on the device) and fed to the device, or synthetic batches made on the device.
#pragma once

#include <cstdint>
#include <memory>

namespace cvtrain {

class BatchLoader;
class BatchSource;
class DeviceDecode;
struct RankInfo;
struct Recipe;
struct TrainingRun;

struct EpochInput {
  EpochInput();
  EpochInput(EpochInput&&) noexcept;
  ~EpochInput();
  std::unique_ptr<BatchLoader> loader;
  std::unique_ptr<DeviceDecode> decode;  // data.decoder on the device: the files the loader left encoded
  std::unique_ptr<BatchSource> source;  // declared after the loader and decoder it uses, so destroyed first
};

EpochInput open_epoch_input(const TrainingRun& run, const Recipe& recipe, const RankInfo& rank, int64_t epoch, int64_t first_batch);

}  // namespace cvtrain
