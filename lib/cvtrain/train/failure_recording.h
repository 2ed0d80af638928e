// A start of a run that ends with an error leaves the error in OUTPUT/failures.jsonl, written by
// the rank that met it (core/failure_log.h), for the report and for whoever looks after the job.
#pragma once

#include <functional>
#include <string>

namespace cvtrain {

// Runs `start`; what it throws, but a stop on request, is recorded as "rank R"'s failure in
// `output`, then thrown on. Call it once the run folder is this run's (a refused second run must
// not write into the first's).
void recording_failure(const std::string& output, int rank, const std::function<void()>& start);

}  // namespace cvtrain
