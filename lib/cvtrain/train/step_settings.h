// What one step is told, from the recipe and its plan: accumulation, clipping, precision, the
// batch mix, the loss, the bad-step limit, the breakdown, and whether train.cuda_graphs may
// capture it on this device and optimizer.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>

#include "cvtrain/recipe/precision_policy.h"
#include "cvtrain/recipe/recipe.h"

namespace torch::optim {
class Optimizer;
}

namespace cvtrain {

struct RunPlan;

struct StepSettings {
  int64_t accumulation = 1;
  double grad_clip = 0;
  PrecisionPolicy precision;
  AugmentSpec augment;
  int64_t num_classes = 0;
  uint64_t seed = 0;
  int64_t max_bad_steps = 10;
  bool breakdown = true;     // observe.breakdown: time the step's phases
  bool cuda_graphs = false;  // capture the step (train/step_graph.h); needs a fused optimizer
};

// The step's settings from the recipe and its plan (accumulation, precision, strategy); train.cuda_graphs
// only where graph_refusal allows it on this device and optimizer (the refusal logged when `log_choices`).
StepSettings step_settings(const Recipe& recipe, const RunPlan& plan, const c10::Device& device, torch::optim::Optimizer& optimizer,
                           bool log_choices);

}  // namespace cvtrain
