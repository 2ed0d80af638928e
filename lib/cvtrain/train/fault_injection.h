// Test aids, read from environment variables, that make a run fail the ways real runs fail (a
// crashing or hanging rank, a signal at an exact step, non-finite numbers), so the end-to-end
// tests can prove recovery. Unset variables cost one getenv per call.
#pragma once

#include <cstdint>

namespace cvtrain {

// After step `step` (first attempt only: a restarted group runs clean):
// CVTRAIN_FAULT_RANK=R CVTRAIN_FAULT_STEP=S makes rank R exit with code 3, as a crash would;
// CVTRAIN_HANG_RANK=R CVTRAIN_HANG_STEP=S makes it sleep there forever.
// On every rank and attempt, CVTRAIN_LEAK_MB_PER_STEP=M keeps M more megabytes after each step, as
// a leak would.
void inject_rank_fault(int rank, int attempt, int64_t step);

// During step `step` (1-based): CVTRAIN_STOP_AT_STEP=S acts as if a SIGTERM arrived.
void inject_stop_request(int64_t step);

// During step `step` (1-based), steps A to B: CVTRAIN_NAN_STEPS=A-B makes the loss and the
// gradients NaN; CVTRAIN_INF_GRAD_STEPS=A-B makes only the gradients non-finite, as an fp16
// overflow does. As factors the step multiplies its loss and gradients by (eager and captured
// steps alike: the host cannot write into a replayed step): 1 on clean steps, NaN or inf on the
// injected ones.
struct NonFiniteFactors {
  double loss = 1, gradients = 1;
};
bool non_finite_injection_configured();
NonFiniteFactors non_finite_factors(int64_t step);

// CVTRAIN_GRAPH_BODY_ON_CPU=1: train.cuda_graphs on a CPU runs the step a graph would capture,
// without a capture (train/step_graph.h), so that multi-rank tests can check its staging and
// collectives where no GPU is.
bool graph_body_on_cpu_requested();

}  // namespace cvtrain
