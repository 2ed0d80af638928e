// The rank's error as its log line says it: LibTorch's without the C++ backtrace.
#include "cvtrain/train/failure_recording.h"

#include <c10/util/Exception.h>
#include <fmt/format.h>

#include "cvtrain/core/error.h"
#include "cvtrain/core/failure_log.h"

namespace cvtrain {

void recording_failure(const std::string& output, int rank, const std::function<void()>& start) {
  const std::string who = fmt::format("rank {}", rank);
  try {
    start();
  } catch (const Stopped&) {
    throw;
  } catch (const c10::Error& e) {
    record_failure(output, who, e.what_without_backtrace());
    throw;
  } catch (const std::exception& e) {
    record_failure(output, who, e.what());
    throw;
  }
}

}  // namespace cvtrain
