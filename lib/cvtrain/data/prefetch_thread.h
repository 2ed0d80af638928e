// A producer run on a thread of its own, up to `depth` items ahead of its consumer: what keeps
// nvJPEG's decode and the render's launches off the training thread (DeviceFeeder with a device
// decoder). next() hands the items over in order, then nullopt after the last, and rethrows the
// producer's error once the items before it are taken. Destroying it stops the producer after the
// item in hand.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

namespace cvtrain {

template <class T>
class PrefetchThread {
 public:
  // `produce` returns the next item, or nullopt after the last; it runs on the thread, which
  // `start` (if given) prepares first (e.g. selects the CUDA device, a per-thread setting).
  PrefetchThread(std::function<std::optional<T>()> produce, size_t depth, std::function<void()> start = nullptr)
      : produce_(std::move(produce)), depth_(depth < 1 ? 1 : depth), start_(std::move(start)), thread_([this] { run(); }) {}
  ~PrefetchThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  PrefetchThread(const PrefetchThread&) = delete;
  PrefetchThread& operator=(const PrefetchThread&) = delete;

  std::optional<T> next() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return !ready_.empty() || finished_; });
    if (ready_.empty()) {
      if (failure_) std::rethrow_exception(failure_);
      return std::nullopt;
    }
    T item = std::move(ready_.front());
    ready_.pop_front();
    lock.unlock();
    changed_.notify_all();
    return item;
  }

 private:
  void run() {
    try {
      if (start_) start_();
      while (true) {
        {
          std::unique_lock<std::mutex> lock(mutex_);
          changed_.wait(lock, [&] { return stopping_ || ready_.size() < depth_; });
          if (stopping_) break;
        }
        std::optional<T> item = produce_();
        std::lock_guard<std::mutex> lock(mutex_);
        if (!item) break;
        ready_.push_back(std::move(*item));
        changed_.notify_all();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      failure_ = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
    changed_.notify_all();
  }

  std::function<std::optional<T>()> produce_;
  size_t depth_;
  std::function<void()> start_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<T> ready_;
  std::exception_ptr failure_;
  bool finished_ = false, stopping_ = false;
  std::thread thread_;  // last: started once everything it reads is constructed
};

}  // namespace cvtrain
