// An epoch's batches for one rank (see epoch_input.h).
#include "cvtrain/train/epoch_input.h"

#include "cvtrain/core/log.h"
#include "cvtrain/data/auto_augment.h"
#include "cvtrain/data/batch_loader.h"
#include "cvtrain/data/dataset.h"
#include "cvtrain/data/device_decode.h"
#include "cvtrain/data/device_feeder.h"
#include "cvtrain/data/host_normalize.h"
#include "cvtrain/data/sampler.h"
#include "cvtrain/data/synthetic.h"
#include "cvtrain/launch/rank_environment.h"
#include "cvtrain/recipe/batch_plan.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/recipe/task_checks.h"
#include "cvtrain/train/run_builder.h"
#include "cvtrain/train/task.h"

namespace cvtrain {

EpochInput::EpochInput() = default;
EpochInput::EpochInput(EpochInput&&) noexcept = default;
// What nvJPEG left to the CPU shows once an epoch's input closes: a dataset full of files it refuses
// would otherwise train at the CPU's pace with nothing said.
EpochInput::~EpochInput() {
  if (!decode || decode->host_decoded() == 0) return;
  const int64_t all = decode->host_decoded() + decode->device_decoded();
  log::warn("data.decoder: {} of the {} files kept for nvJPEG this epoch were decoded on the CPU instead ({:.1f}%: refused by "
            "nvJPEG, or in batches it rejected)",
            decode->host_decoded(), all, 100.0 * static_cast<double>(decode->host_decoded()) / static_cast<double>(all));
}

EpochInput open_epoch_input(const TrainingRun& run, const Recipe& recipe, const RankInfo& rank, int64_t epoch, int64_t first_batch) {
  LoaderOptions options = run.loader;
  options.drop_last = true;
  options.transform.augment = &recipe.augment;
  options.transform.augment_fill = augment_fill(recipe.data.mean);
  options.transform.epoch = epoch;
  options.bad_samples = run.data.train_bad.get();
  options.timings = run.data.train_timings.get();
  const Dataset& train = *run.data.train;
  const int64_t global_batch = recipe.train.global_batch;
  const std::vector<int64_t> order = repeated_order(epoch_order(options.transform.seed, epoch, train.size()), recipe.augment.repeats, global_batch);
  std::vector<int64_t> share = rank_share(order, global_batch, rank.world_size, rank.rank);
  share.erase(share.begin(), share.begin() + first_batch * BatchPlan::of(recipe.train).per_rank());
  EpochInput input;
  if (recipe.data.format == DataFormat::kSynthetic) {
    const auto [height, width] = crop_size(recipe);
    const SyntheticShape shape{height, width, recipe.task == TaskKind::kSegmentation};
    input.source = std::make_unique<SyntheticBatches>(train, std::move(share), options.batch_size, shape, run.feed, options.transform.seed);
  } else {
    FeedOptions feed = run.feed;
    feed.erase_mode = recipe.augment.random_erasing.mode;
    options.normalize = host_normalize(feed);
    input.loader = std::make_unique<BatchLoader>(run.task->training_batches(train, options), std::move(share), options);
    if (run.jpeg_decoder) input.decode = std::make_unique<DeviceDecode>(*run.jpeg_decoder, train, options.transform, options.bad_samples);
    input.source = std::make_unique<DeviceFeeder>(*input.loader, feed, input.decode.get());
  }
  return input;
}

}  // namespace cvtrain
