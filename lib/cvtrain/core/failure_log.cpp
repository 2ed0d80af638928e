// failures.jsonl: appended with one write(2) per line under O_APPEND, so the lines of ranks failing
// at once do not interleave.
#include "cvtrain/core/failure_log.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "cvtrain/core/error.h"
#include "cvtrain/core/json_reader.h"
#include "cvtrain/core/text.h"
#include "cvtrain/core/text_file.h"
#include "cvtrain/core/this_machine.h"

namespace cvtrain {

void record_failure(const std::string& folder, const std::string& who, const std::string& message) {
  const std::string line = fmt::format("{{\"who\": {}, \"host\": {}, \"time\": {}, \"message\": {}}}\n", json_string(who),
                                       json_string(host_name()), json_string(utc_now()), json_string(message));
  const std::string path = (std::filesystem::path(folder) / kFailuresFile).string();
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  [[maybe_unused]] const ssize_t written = ::write(fd, line.data(), line.size());
  ::close(fd);
}

std::vector<FailureRecord> read_failures(const std::string& folder) {
  const std::string path = (std::filesystem::path(folder) / kFailuresFile).string();
  const std::optional<std::string> text = read_text_file(path);
  std::vector<FailureRecord> records;
  if (!text) return records;
  std::istringstream lines(*text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    try {
      const JsonValue record = parse_json(line, fmt::format("{}:{}", path, number));
      records.push_back(FailureRecord{record.text("who"), record.text("host"), record.text("time"), record.text("message")});
    } catch (const Error&) {
      // a line cut short by a killed writer: the others still tell the story
    }
  }
  return records;
}

}  // namespace cvtrain
