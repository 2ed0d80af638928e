// Strategies at world size 2 without spawning the binary: two ranks as two threads of this process
// (two_ranks.h), each running the real TrainStep on half of a batch (mlp_replica.h). Their weights
// after the step equal one process's step on the whole batch.
#include "torch_catch.h"

#include <ATen/ATen.h>

#include "cvtrain/comm/communicator.h"
#include "cvtrain/recipe/recipe.h"
#include "mlp_replica.h"
#include "two_ranks.h"

using namespace cvtrain;
using cvtrain::testing::Replica;
using cvtrain::testing::seeded_mlp;

TEST_CASE("ddp and zero2 with two in-process ranks equal one process on the whole batch", "[parallel]") {
  torch::manual_seed(7);
  const at::Tensor images = at::randn({8, 1, 8, 8}), labels = at::arange(8) % 4;
  auto alone = single_process_communicator();
  Replica whole(seeded_mlp(), StrategyKind::kSingle, *alone);
  whole.step(*alone, 1, images, labels);

  for (const StrategyKind kind : {StrategyKind::kDdp, StrategyKind::kZero2}) {
    INFO("strategy " << name_of(kind));
    std::vector<std::shared_ptr<Classifier>> models{seeded_mlp(), seeded_mlp()};  // built here: the seed is process-wide
    std::vector<at::Tensor> after(2);
    cvtrain::testing::on_two_ranks([&](Communicator& comm) {
      const int64_t rank = comm.rank();
      Replica replica(models[static_cast<size_t>(rank)], kind, comm);
      replica.step(comm, 1, images.narrow(0, 4 * rank, 4), labels.narrow(0, 4 * rank, 4));
      after[static_cast<size_t>(rank)] = replica.weights();
    });
    INFO("largest difference to one process " << (after[0] - whole.weights()).abs().max().item<float>() << " at "
                                              << (after[0] - whole.weights()).abs().argmax().item<int64_t>());
    CHECK(at::equal(after[0], after[1]));
    // The gradients differ from one process's by summation order (two halves all-reduced against
    // one batch; and the BLAS may split a product's sum by how busy the machine is): about 1e-6 of
    // gradients of at most 1. AdamW's first step moves a weight by lr g / (|g| + eps), at most
    // lr / eps = 10 times a gradient's change: 1e-5. An average gone wrong moves weights by up to
    // lr = 1e-2. (1e-6 failed about one run in 50 with both cores busy.)
    CHECK(at::allclose(after[0], whole.weights(), 1e-5, 1e-5));
    CHECK_FALSE(at::allclose(after[0], cvtrain::testing::flat_weights(*seeded_mlp()), 1e-3, 1e-3));  // the step moved them
  }
}
