// Batch assembly: worker w makes batches w, w+W, w+2W, ... so any number of workers produces
// exactly the same batches (every random decision is keyed by the sample, not by the thread).
#include "cvtrain/data/batch_loader.h"

#include <fmt/format.h>
#include <pthread.h>

#include "cvtrain/data/classification_batches.h"

namespace cvtrain {

BatchLoader::BatchLoader(const Dataset& dataset, std::vector<int64_t> order, LoaderOptions options)
    : BatchLoader(std::make_shared<ClassificationBatches>(dataset, options), std::move(order), options) {}

BatchLoader::BatchLoader(std::shared_ptr<BatchMaker> maker, std::vector<int64_t> order, LoaderOptions options)
    : maker_(std::move(maker)), order_(std::move(order)), options_(std::move(options)) {
  const auto samples = static_cast<int64_t>(order_.size());
  const int64_t b = options_.batch_size;
  num_batches_ = options_.drop_last ? samples / b : (samples + b - 1) / b;
  for (int64_t w = 0; w < options_.workers; ++w) workers_.emplace_back(&BatchLoader::worker_loop, this, w);
}

BatchLoader::~BatchLoader() { stop_workers(); }

void BatchLoader::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  room_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

Batch BatchLoader::make_batch(int64_t batch_index) {
  const int64_t first = batch_index * options_.batch_size;
  return maker_->make(order_, first, std::min<int64_t>(options_.batch_size, static_cast<int64_t>(order_.size()) - first));
}

void BatchLoader::worker_loop(int64_t worker) {
  // Named for top, perf and gdb (15 characters at most): scripts/profile_data.sh picks them out.
  pthread_setname_np(pthread_self(), fmt::format("cvtrain-data:{}", worker % 100).c_str());
  for (int64_t b = worker; b < num_batches_; b += options_.workers) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // Every worker has a batch of its own in hand, and `prefetch` finished ones may wait beyond
      // those: a window of only `prefetch` batches would leave all but `prefetch` workers idle.
      room_.wait(lock, [&] { return stopping_ || b < next_batch_ + options_.workers + options_.prefetch; });
      if (stopping_) return;
    }
    try {
      Batch batch = make_batch(b);
      std::lock_guard<std::mutex> lock(mutex_);
      finished_.emplace(b, std::move(batch));
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!failure_ || b < failed_batch_) {
        failure_ = std::current_exception();
        failed_batch_ = b;
      }
    }
    ready_.notify_all();
  }
}

std::optional<Batch> BatchLoader::next() {
  if (next_batch_ >= num_batches_) return std::nullopt;
  if (workers_.empty()) return make_batch(next_batch_++);
  std::unique_lock<std::mutex> lock(mutex_);
  // Batches before a failed one are still delivered: the error surfaces at its own batch.
  ready_.wait(lock, [&] { return finished_.count(next_batch_) || (failure_ && failed_batch_ == next_batch_); });
  if (!finished_.count(next_batch_)) std::rethrow_exception(failure_);
  Batch batch = std::move(finished_.at(next_batch_));
  finished_.erase(next_batch_++);
  lock.unlock();
  room_.notify_all();
  return batch;
}

}  // namespace cvtrain
