// `cvtrain report RUN`: one self-contained HTML page (inline CSS and SVG, no script, no network)
// of a run folder: key figures, the verdicts, loss and accuracy, throughput, the step-time
// breakdown over time, per-rank step times, memory, the resolved recipe and provenance. Torch-free.
#pragma once

#include <string>

#include "cvtrain/observe/run_history.h"

namespace cvtrain {

// `generated_at`: when the page is written, shown in its footer.
std::string run_report_html(const RunHistory& run, const std::string& generated_at);

}  // namespace cvtrain
