// What `cvtrain preflight` measured on every rank, and the findings drawn from it before training:
// the rank that computes slowly, the link that copies slowly, an input pipeline that cannot feed
// the model, gradients the network cannot all-reduce in time. Each finding names the rank, link or
// pipeline and the recipe key to change. Torch-free; the probes are in tools/preflight.cpp.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cvtrain/observe/perf_verdicts.h"

namespace cvtrain {

struct RankProbe {
  std::string label;                 // rank_label()
  double matmul_tflops = 0;          // a square matrix product in the recipe's precision
  std::optional<double> h2d_gbps;    // pinned host-to-device copies; CUDA only
  std::optional<double> pipeline_images_per_s;  // this rank's input pipeline alone, as the recipe configures it; none for synthetic data
  double model_images_per_s = 0;     // forward and backward of the recipe's model at its micro-batch
};

struct PreflightResults {
  std::vector<RankProbe> ranks;
  std::optional<double> bus_gbps;  // all-reduce bus bandwidth over the job's ranks (as nccl-tests defines it)
  double allreduce_mb = 0;         // the tensor it was measured with
  double gradient_mb = 0;          // what a step all-reduces: the model's gradients
  std::string device;              // "NVIDIA H200", "cpu"
};

// The findings, worst first within each kind; empty when nothing will hold the job back.
std::vector<Verdict> preflight_findings(const PreflightResults& results, const Recipe& recipe, const RunPlan& plan);
// The table a person reads: one row per rank, the all-reduce bandwidth under it.
std::string preflight_table(const PreflightResults& results);
std::string preflight_json(const PreflightResults& results, const std::vector<Verdict>& findings);

}  // namespace cvtrain
