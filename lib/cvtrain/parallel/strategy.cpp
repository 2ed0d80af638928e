// make_strategy: the one place that maps the recipe's strategy to its implementation.
#include "cvtrain/parallel/strategy.h"

#include <torch/nn/module.h>

#include "cvtrain/core/error.h"
#include "cvtrain/comm/communicator.h"
#include "cvtrain/models/batch_norm.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/parallel/ddp_strategy.h"
#include "cvtrain/parallel/replicated.h"
#include "cvtrain/parallel/sharded.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

namespace {

void synchronise_batch_norm(torch::nn::Module& model, Communicator& comm) {
  for (const auto& module : model.modules())
    if (auto* bn = module->as<SyncableBatchNorm2dImpl>())
      bn->set_all_reduce([&comm](at::Tensor& t) { comm.all_reduce_sum(t, "SyncBatchNorm statistics all-reduce"); });
}

}  // namespace

std::unique_ptr<Strategy> make_strategy(StrategyKind kind, Classifier& model, Communicator& comm, double bucket_mb, bool sync_bn) {
  if (sync_bn && comm.world_size() > 1) synchronise_batch_norm(model, comm);
  switch (kind) {
    case StrategyKind::kSingle:
      return std::make_unique<SingleStrategy>(model);  // one rank: the recipe loader checked it
    case StrategyKind::kDdp:
      return std::make_unique<DdpStrategy>(model, comm, bucket_mb);
    case StrategyKind::kZero1:
      return make_zero(1, model, comm, bucket_mb);
    case StrategyKind::kZero2:
      return make_zero(2, model, comm, bucket_mb);
    case StrategyKind::kFsdp:
      return make_fsdp(model, comm);
    case StrategyKind::kAuto:
      break;
  }
  throw Error("strategy auto reached make_strategy unresolved (the recipe loader resolves it for the job's world size)");
}

}  // namespace cvtrain
