// The step's settings (see step_settings.h).
#include "cvtrain/train/step_settings.h"

#include <optional>
#include <string>

#include "cvtrain/core/log.h"
#include "cvtrain/optim/optimizer.h"
#include "cvtrain/recipe/run_plan.h"
#include "cvtrain/train/fault_injection.h"
#include "cvtrain/train/step_graph.h"

namespace cvtrain {

StepSettings step_settings(const Recipe& recipe, const RunPlan& plan, const c10::Device& device, torch::optim::Optimizer& optimizer,
                           bool log_choices) {
  StepSettings s;
  s.accumulation = plan.batch.accumulation;
  s.grad_clip = recipe.train.grad_clip;
  s.precision = plan.precision;
  s.augment = recipe.augment;
  s.num_classes = recipe.model.num_classes;
  s.seed = static_cast<uint64_t>(recipe.train.seed);
  s.max_bad_steps = recipe.train.max_bad_steps;
  s.breakdown = recipe.observe.breakdown;
  if (recipe.train.cuda_graphs) {
    const bool cuda = device.is_cuda() || graph_body_on_cpu_requested();
    const std::optional<std::string> refusal =
        graph_refusal(GraphConditions{cuda, dynamic_cast<DeviceGradScaling*>(&optimizer) != nullptr, plan.strategy});
    s.cuda_graphs = !refusal;
    if (log_choices && refusal) log::warn("train.cuda_graphs: running eager: {}", *refusal);
    if (log_choices && !refusal)
      log::info(
          "train.cuda_graphs: this start's first {} steps run eagerly, the next is captured and then replayed; the breakdown "
          "counts each replay as forward",
          kGraphWarmupSteps);
  }
  return s;
}

}  // namespace cvtrain
