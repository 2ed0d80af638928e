// OUTPUT/failures.jsonl: how a run's starts ended badly, one line each as it happens (a rank that
// ended with an error, the launcher's account of a group it stopped), so the report, and a person
// after the fact, can say why without the job's console (a Slurm log, a terminal long closed).
#pragma once

#include <string>
#include <vector>

namespace cvtrain {

inline constexpr const char* kFailuresFile = "failures.jsonl";

struct FailureRecord {
  std::string who;  // "rank 1", "launcher"
  std::string host;
  std::string time;  // UTC, as 2026-12-02T08:02:20Z
  std::string message;
};

// Appends one line to FOLDER/failures.jsonl. Never throws: a failure being reported must not be
// hidden by a second one (a full disk, a folder gone).
void record_failure(const std::string& folder, const std::string& who, const std::string& message);

// The lines of FOLDER/failures.jsonl, oldest first; none when there is no such file. A damaged
// line (a writer killed mid-line) is left out.
std::vector<FailureRecord> read_failures(const std::string& folder);

}  // namespace cvtrain
