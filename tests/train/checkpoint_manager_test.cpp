// CheckpointManager on two in-process ranks (two_ranks.h, mlp_replica.h): a checkpoint that ddp or
// zero2 saved after step 1 resumes fresh replicas to the same weights and optimizer state, so that
// their step 2 equals the uninterrupted run's, bit for bit.
#include "torch_catch.h"

#include <ATen/ATen.h>

#include <filesystem>

#include "cvtrain/comm/communicator.h"
#include "cvtrain/optim/lr_schedule.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/train/checkpoint_manager.h"
#include "mlp_replica.h"
#include "temp_dir.h"
#include "two_ranks.h"

using namespace cvtrain;
using cvtrain::testing::Replica;
using cvtrain::testing::seeded_mlp;

namespace {

// What a rank saw: its weights after step 1, after step 2, after the resume and after the resumed step 2.
struct RankRecord {
  at::Tensor after_one, after_two, resumed, resumed_after_two;
  int64_t resumed_step = -1;
};

}  // namespace

TEST_CASE("a checkpoint two ranks saved resumes fresh ranks to the step that continues the run exactly", "[train]") {
  const at::Tensor images = at::randn({16, 1, 8, 8}), labels = at::arange(16) % 4;
  for (const StrategyKind kind : {StrategyKind::kDdp, StrategyKind::kZero2}) {
    INFO("strategy " << name_of(kind));
    cvtrain::testing::TempDir dir;
    Recipe recipe;
    recipe.output = dir.file("run");
    recipe.train.global_batch = 8;
    recipe.optim = cvtrain::testing::replica_optimizer();
    std::filesystem::create_directories(recipe.output);
    const LrSchedule schedule(recipe.schedule, recipe.optim.lr, 2, 2);
    std::vector<std::shared_ptr<Classifier>> first{seeded_mlp(0), seeded_mlp(0)}, fresh{seeded_mlp(1), seeded_mlp(1)};
    std::vector<RankRecord> seen(2);
    cvtrain::testing::on_two_ranks([&](Communicator& comm) {
      const auto rank = static_cast<size_t>(comm.rank());
      const auto half = [&](int64_t batch) {
        return std::pair{images.narrow(0, 8 * batch + 4 * comm.rank(), 4), labels.narrow(0, 8 * batch + 4 * comm.rank(), 4)};
      };
      {
        Replica run(first[rank], kind, comm);
        CheckpointManager checkpoints(recipe, comm, c10::Device(c10::kCPU), schedule);
        run.step(comm, 1, half(0).first, half(0).second);
        TrainPosition position;
        position.step = 1;
        position.batches_done = 1;
        position.global_batch = 8;
        checkpoints.save(position, *run.strategy, *run.optimizer, run.scaler, recipe);
        seen[rank].after_one = run.weights();
        run.step(comm, 2, half(1).first, half(1).second);
        seen[rank].after_two = run.weights();
      }
      Replica resumed(fresh[rank], kind, comm);
      CheckpointManager checkpoints(recipe, comm, c10::Device(c10::kCPU), schedule);
      const std::optional<ResumedRun> from = checkpoints.resume(recipe.checkpoint.resume, *resumed.strategy, *resumed.optimizer);
      if (!from) throw std::runtime_error("nothing was resumed");
      seen[rank].resumed_step = from->position.step;
      seen[rank].resumed = resumed.weights();
      resumed.step(comm, 2, half(1).first, half(1).second);
      seen[rank].resumed_after_two = resumed.weights();
    });
    CHECK(std::filesystem::exists(dir.file("run/checkpoints/step-00000001/COMPLETE")));
    for (const RankRecord& r : seen) {
      CHECK(r.resumed_step == 1);
      CHECK(at::equal(r.resumed, r.after_one));
      CHECK_FALSE(at::equal(r.after_one, r.after_two));    // step 2 moved the weights
      CHECK(at::equal(r.resumed_after_two, r.after_two));  // AdamW's moments and step count came back too
    }
    CHECK(at::equal(seen[0].after_two, seen[1].after_two));
  }
}
