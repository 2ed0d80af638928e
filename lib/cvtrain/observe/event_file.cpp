// TFRecord framing and Event encoding (see event_file.h). Field numbers from TensorFlow's
// event.proto and summary.proto: Event {1 wall_time double, 2 step int64, 3 file_version string,
// 5 summary Summary, 7 session_log SessionLog}; Summary {1 repeated Value}; Value {1 tag string,
// 2 simple_value float}; SessionLog {1 status enum: START = 1}.
#include "cvtrain/observe/event_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "cvtrain/core/crc32c.h"
#include "cvtrain/core/error.h"
#include "cvtrain/core/this_machine.h"

namespace cvtrain {
namespace {

void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

template <class T>
void put_fixed(std::string& out, T value) {  // little-endian, as x86 and the wire format are
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void put_key(std::string& out, int field, int wire_type) { put_varint(out, static_cast<uint64_t>(field << 3 | wire_type)); }

void put_bytes(std::string& out, int field, const std::string& bytes) {
  put_key(out, field, 2);
  put_varint(out, bytes.size());
  out += bytes;
}

}  // namespace

uint32_t masked_crc32c(const void* data, size_t size) {
  const uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string event_bytes(double wall_time_s, int64_t step, const std::string& file_version,
                        const std::vector<std::pair<std::string, double>>& scalars) {
  std::string event;
  put_key(event, 1, 1);
  put_fixed(event, wall_time_s);
  put_key(event, 2, 0);
  put_varint(event, static_cast<uint64_t>(step));
  if (!file_version.empty()) put_bytes(event, 3, file_version);
  if (scalars.empty()) return event;
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string v;
    put_bytes(v, 1, tag);
    put_key(v, 2, 5);
    put_fixed(v, static_cast<float>(value));
    put_bytes(summary, 1, v);
  }
  put_bytes(event, 5, summary);
  return event;
}

std::string session_start_bytes(double wall_time_s, int64_t step) {
  std::string event = event_bytes(wall_time_s, step, "", {});
  std::string session_log;
  put_key(session_log, 1, 0);
  put_varint(session_log, 1);  // SessionLog.START
  put_bytes(event, 7, session_log);
  return event;
}

EventFile::EventFile(const std::string& folder) {
  const auto now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  path_ = fmt::format("{}/events.out.tfevents.{}.{}.{}", folder, static_cast<int64_t>(now), host_name(), getpid());
  file_ = std::fopen(path_.c_str(), "wb");
  if (!file_) throw IoError(fmt::format("{}: cannot open for writing ({})", path_, std::strerror(errno)));
  write_record(event_bytes(now, 0, "brain.Event:2", {}));
}

EventFile::~EventFile() { std::fclose(file_); }

void EventFile::write_scalars(int64_t step, double wall_time_s, const std::vector<std::pair<std::string, double>>& scalars) {
  write_record(event_bytes(wall_time_s, step, "", scalars));
}

void EventFile::write_session_start(int64_t step, double wall_time_s) { write_record(session_start_bytes(wall_time_s, step)); }

void EventFile::write_record(const std::string& payload) {
  std::string record;
  put_fixed(record, static_cast<uint64_t>(payload.size()));
  put_fixed(record, masked_crc32c(record.data(), 8));
  record += payload;
  put_fixed(record, masked_crc32c(payload.data(), payload.size()));
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size() || std::fflush(file_) != 0)
    throw IoError(fmt::format("{}: cannot write ({})", path_, std::strerror(errno)));
}

}  // namespace cvtrain
