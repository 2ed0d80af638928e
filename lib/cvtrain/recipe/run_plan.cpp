// The resolved run (see run_plan.h): built from the recipe, rows for people and provenance.json.
#include "cvtrain/recipe/run_plan.h"

#include <fmt/format.h>

namespace cvtrain {
namespace {

std::string precision_row(const PrecisionPolicy& p) {
  const AutocastType autocast = p.autocast();
  std::string row = p.name() + (autocast == AutocastType::kBFloat16  ? ": autocast to bfloat16"
                                : autocast == AutocastType::kFloat16 ? ": autocast to float16"
                                : p.tf32()                           ? ": TF32 matrix products"
                                                                     : ": strict float32");
  if (p.loss_scaling()) row += ", dynamic loss scaling";
  return row;
}

std::string optimizer_row(OptimImplementation path) {
  switch (path) {
    case OptimImplementation::kFused:
      return "fused (ATen's fused kernels; skips decided on the device)";
    case OptimImplementation::kForeach:
      return "foreach (multi-tensor)";
    case OptimImplementation::kAuto:
      break;
  }
  return "auto (multi-tensor, torch.optim's default)";
}

}  // namespace

OptimImplementation resolve_optimizer_path(const Recipe& recipe) {
  if (recipe.train.cuda_graphs && recipe.optim.implementation == OptimImplementation::kAuto) return OptimImplementation::kFused;
  return recipe.optim.implementation;
}

RunPlan RunPlan::of(const Recipe& recipe, int world_size) {
  RunPlan plan;
  plan.batch = BatchPlan::of(recipe.train);
  plan.batch.world = world_size;
  plan.precision = PrecisionPolicy{recipe.precision};
  plan.strategy = resolve_strategy(recipe.strategy, world_size);
  plan.optimizer_path = resolve_optimizer_path(recipe);
  plan.micro_batch_left = recipe.train.micro_batch_auto;
  plan.workers_automatic = recipe.data.workers.automatic;
  if (!recipe.data.workers.automatic) plan.workers = recipe.data.workers.count;
  return plan;
}

std::string RunPlan::workers_described() const {
  const std::string count = workers ? std::to_string(*workers) : "?";
  return workers_automatic ? "auto (" + count + ")" : count;
}

std::vector<std::pair<std::string, std::string>> RunPlan::rows() const {
  std::vector<std::pair<std::string, std::string>> rows{
      {"batch", fmt::format("global {} = micro {} x accumulation {} x world size {}{}", batch.global, batch.micro, batch.accumulation,
                            batch.world, micro_batch_left ? " (micro-batch auto: searched in the GPU's memory at the start)" : "")},
      {"strategy", name_of(strategy)},
      {"precision", precision_row(precision)},
      {"optimizer", optimizer_row(optimizer_path)},
  };
  if (!device.empty()) rows.emplace_back("device", device);
  if (!decoder.empty()) rows.emplace_back("decoder", decoder);
  if (workers)
    rows.emplace_back("workers", fmt::format("{}{}",
                                             *workers == 0 ? std::string("none: the training thread decodes")
                                                           : fmt::format("{} decode thread(s) per rank", *workers),
                                             workers_automatic ? " (data.workers: auto, from the cores the job has here)" : ""));
  return rows;
}

}  // namespace cvtrain
