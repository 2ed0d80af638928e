// `cvtrain preflight` and `preflight: true`: a few seconds of measurements on the job's real ranks
// before any training — each rank's matrix-product rate, its host-to-device bandwidth (CUDA), its
// input pipeline against what its model consumes, and the all-reduce bus bandwidth across them —
// and the findings that name what will hold the job back (observe/preflight_findings.h).
#pragma once

#include "cvtrain/observe/preflight_findings.h"

namespace cvtrain {

struct Recipe;
struct PreflightParts;

// Collective: every rank calls it. Leaves the model's weights, buffers and the random streams as
// they were, so a run trains the same with or without it. Rank 0 logs the table and the findings
// and writes OUTPUT/preflight.json; every rank gets the results.
PreflightResults run_preflight(PreflightParts& run, const Recipe& recipe);

}  // namespace cvtrain
