// TensorBoard event files written by cvtrain itself: TFRecord framing (length, masked CRC-32C of
// the length, the payload, masked CRC-32C of the payload) around Event protocol buffers encoded
// by hand, holding scalar summaries. `tensorboard --logdir OUTPUT` reads them. Torch-free.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace cvtrain {

// The masked CRC-32C (core/crc32c.h) TFRecord stores.
uint32_t masked_crc32c(const void* data, size_t size);

class EventFile {
 public:
  // Creates FOLDER/events.out.tfevents.<seconds>.<host>.<pid> and writes the file-version event;
  // throws IoError naming the path.
  explicit EventFile(const std::string& folder);
  ~EventFile();
  EventFile(const EventFile&) = delete;
  EventFile& operator=(const EventFile&) = delete;

  // One event at `step` with a scalar per (tag, value); flushed, so a crash loses nothing written.
  void write_scalars(int64_t step, double wall_time_s, const std::vector<std::pair<std::string, double>>& scalars);
  // A SessionLog START at `step`: TensorBoard's reader drops the events of earlier files at this
  // step and after (a resumed run logs them again).
  void write_session_start(int64_t step, double wall_time_s);
  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& payload);
  std::string path_;
  std::FILE* file_ = nullptr;
};

// The bytes of an Event holding SessionLog {status: START} (event.proto: Event field 7).
std::string session_start_bytes(double wall_time_s, int64_t step);

// The bytes of one Event message (tensorflow/core/util/event.proto): wall_time, step, and either
// the file_version or a Summary of simple_value scalars. Exposed for the tests.
std::string event_bytes(double wall_time_s, int64_t step, const std::string& file_version,
                        const std::vector<std::pair<std::string, double>>& scalars);

}  // namespace cvtrain
