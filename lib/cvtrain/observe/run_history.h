// What a run folder says about its run, read back for `cvtrain report`: the metrics.jsonl records
// by kind, perf_summary.json, provenance.json and the resolved recipe. A run still going, or
// killed, has a partial last line and no summary: both are noted, not errors. Torch-free.
#pragma once

#include <string>
#include <vector>

#include "cvtrain/core/failure_log.h"
#include "cvtrain/core/json_reader.h"

namespace cvtrain {

struct RunHistory {
  std::string folder;
  std::vector<JsonValue> intervals;  // the `train` lines, in order
  std::vector<JsonValue> epochs;     // the `epoch` lines
  JsonValue summary;                 // perf_summary.json; null until the run has ended
  JsonValue provenance;              // provenance.json; null for runs of older versions
  JsonValue preflight;               // preflight.json; null unless the run had `preflight: true` (or `cvtrain preflight` wrote there)
  JsonValue best;                    // best/best.json (checkpoint.keep_best); null when the run kept none
  JsonValue eval;                    // eval.json, as `cvtrain eval` writes it into the run folder; null when it has not
  std::string recipe_yaml;           // recipe.yaml as written; "" when absent
  std::vector<FailureRecord> failures;  // failures.jsonl: how earlier and this start ended badly, oldest first
  std::vector<std::string> notes;    // what was missing or skipped, for the reader of the report
};

// Every start's metrics, oldest first, a resumed start's records replacing what the one before it
// logged after its checkpoint. Throws Error naming the folder when it holds no metrics.jsonl, and
// file:line for a damaged line other than a partial last one.
RunHistory read_run_history(const std::string& folder);

// The `epoch` lines of every start of a run, oldest first: metrics.1.jsonl, metrics.2.jsonl, ...,
// then metrics.jsonl (each start of a resumed run keeps the earlier one's file), as read_run_history
// reads them. Empty when the
// folder has none; throws Error with file:line for a damaged line other than a file's last.
std::vector<JsonValue> epochs_of_every_start(const std::string& folder);

// The failures recorded since the run's latest start began (provenance.json's started_at), oldest
// first: the first is most often the cause, the others its consequences. Empty when it did not fail.
std::vector<FailureRecord> failures_of_latest_start(const RunHistory& run);

// Every record's `key` as a number, NaN where it is missing or null.
std::vector<double> column(const std::vector<JsonValue>& records, const std::string& key);

}  // namespace cvtrain
