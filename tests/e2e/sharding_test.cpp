// Sharded strategies on CPU with Gloo, 2 ranks: zero1, zero2 and fsdp give ddp's weights bit for bit
// wherever they add in its order (SGD and AdamW; an MLP, and a ViT whose blocks are FSDP units, with
// activation checkpointing too), and within the norm's rounding when clipping; zero1 holds half the optimizer state and fsdp half the
// parameters per rank; at world size 1 they run a real process group and equal single; a
// checkpoint of any strategy resumes under any other.
#include "torch_catch.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <cmath>

#include <map>
#include <regex>

#include "cvtrain/models/safetensors.h"
#include "run_shell.h"
#include "saved_models.h"

using cvtrain::testing::max_checkpoint_difference;
using cvtrain::testing::read_text;
using cvtrain::testing::Run;
using cvtrain::testing::shell;
using cvtrain::testing::TempDir;

namespace {

// 2 ranks x micro-batch 16 x accumulation 2 = 64 images per step; the gradient norm is clipped.
const std::string kTwoRankRun =
    " data.max_samples=640 data.val= train.global_batch=64 train.micro_batch=16 train.log_every=1 train.grad_clip=0.5"
    " distributed.nproc_per_node=2 optim.weight_decay=0.05";
const std::string kMlp = " model.arch=mlp train.max_steps=5";
const std::string kVit = " model.arch=vit_tiny_patch16 model.image_size=32 train.max_steps=3";
const char* kStrategies[] = {"ddp", "zero1", "zero2", "fsdp"};


std::string train(const TempDir& dir, const std::string& name, const std::string& overrides) {
  return "$CVTRAIN --recipe $RECIPE" + kTwoRankRun + overrides + " distributed.master_port=" + cvtrain::testing::port() +
         " output=" + dir.file(name) + " > " + dir.file(name + ".log") + " 2>&1 || { echo \"" + name + " failed\"; tail -5 " +
         dir.file(name + ".log") + "; }\n";
}

std::string weights(const TempDir& dir, const std::string& run, int step) {
  return dir.file(run + "/checkpoints/step-" + std::string(8 - std::to_string(step).size(), '0') + std::to_string(step) + "/model.safetensors");
}

double epoch_value(const TempDir& dir, const std::string& run, const std::string& key) {
  std::smatch match;
  const std::string metrics = read_text(dir.file(run + "/metrics.jsonl"));
  REQUIRE(std::regex_search(metrics, match, std::regex("\"" + key + "\": ([0-9.eE+-]+)")));
  return std::stod(match[1]);
}

}  // namespace

// Where a sharded strategy adds the same numbers in the same order as ddp, it must give ddp's
// weights bit for bit, on any CPU: with 2 ranks a reduce-scatter's sum is the all-reduce's (a + b
// = b + a), dividing by the world size 2 is exact, and the optimizer's update is the same
// arithmetic on each element whichever tensor holds it. Two orders differ, by design:
// - accumulation: ddp and zero1 add a rank's micro-steps first and reduce once, (a1 + a2) + (b1 + b2);
//   zero2 and fsdp reduce each micro-step as its backward ends, (a1 + b1) + (a2 + b2). Each pair is
//   exact within itself; across them float addition is not associative, and AdamW's normalised
//   update magnifies a last-bit difference wherever a gradient nearly cancels (2e-5 after 6 steps
//   on one CPU, 5e-5 on another), so no tolerance across the two would be a contract.
// - clipping: the gradient norm sums squares per shard, then over ranks (the next test bounds that).
namespace {

// Trains every case under the four strategies (2 ranks each) and checks, case by case, that each
// sharded strategy gives ddp's weights bit for bit where it adds in ddp's order (see above).
void check_sharded_equals_ddp(const TempDir& dir, const std::map<std::string, std::string>& cases) {
  std::string script;
  for (const auto& [name, overrides] : cases)
    for (const char* strategy : kStrategies) script += train(dir, name + "_" + strategy, overrides + " strategy=" + strategy);
  const Run run = shell(script, dir);
  INFO(run.output);
  REQUIRE(run.output.find("failed") == std::string::npos);
  const auto difference = [&](const std::string& name, const std::string& a, const std::string& b) {
    const int steps = name.rfind("mlp", 0) == 0 ? 5 : 3;
    return max_checkpoint_difference(weights(dir, name + "_" + a, steps), weights(dir, name + "_" + b, steps));
  };
  for (const auto& [name, overrides] : cases) {
    INFO(name);
    if (name == "mlp_adamw_accumulated") {
      CHECK(difference(name, "ddp", "zero1") == 0);   // both add micro-steps first
      CHECK(difference(name, "zero2", "fsdp") == 0);  // both add ranks first
      continue;
    }
    for (const char* strategy : {"zero1", "zero2", "fsdp"}) {
      INFO(strategy);
      CHECK(difference(name, "ddp", strategy) == 0);
    }
  }
}

const std::string kWholeBatch = " train.grad_clip=0 train.micro_batch=32";  // 2 ranks x 32 = 64: no accumulation

}  // namespace

TEST_CASE("zero1, zero2 and fsdp equal ddp bit for bit wherever they add in ddp's order: an MLP, SGD and AdamW, accumulated",
          "[e2e][ranks]") {
  TempDir dir;
  check_sharded_equals_ddp(dir, {{"mlp_sgd", kMlp + kWholeBatch + " optim.name=sgd optim.lr=0.1 optim.momentum=0.9 optim.nesterov=true"},
                                 {"mlp_adamw", kMlp + kWholeBatch + " optim.name=adamw optim.lr=0.01"},
                                 {"mlp_adamw_accumulated", kMlp + " train.grad_clip=0 optim.name=adamw optim.lr=0.01"}});  // 16 x 2
  // Per rank, 2 ranks: zero1 and zero2 keep half of ddp's Adam moments; fsdp half of its parameters
  // too (within 1%: each flat shard is padded to a multiple of the world size).
  const double ddp_state = epoch_value(dir, "mlp_adamw_ddp", "optimizer_state_mb"), ddp_params = epoch_value(dir, "mlp_adamw_ddp", "param_mb");
  CHECK(epoch_value(dir, "mlp_adamw_zero1", "optimizer_state_mb") == Approx(ddp_state / 2).epsilon(0.01));
  CHECK(epoch_value(dir, "mlp_adamw_zero2", "optimizer_state_mb") == Approx(ddp_state / 2).epsilon(0.01));
  CHECK(epoch_value(dir, "mlp_adamw_fsdp", "optimizer_state_mb") == Approx(ddp_state / 2).epsilon(0.01));
  CHECK(epoch_value(dir, "mlp_adamw_fsdp", "param_mb") == Approx(ddp_params / 2).epsilon(0.01));
  CHECK(epoch_value(dir, "mlp_adamw_zero1", "param_mb") == Approx(ddp_params).epsilon(0.01));
}

TEST_CASE("zero1, zero2 and fsdp equal ddp bit for bit wherever they add in ddp's order: a ViT with drop-path, blocks recomputed or not",
          "[e2e][ranks]") {
  TempDir dir;
  check_sharded_equals_ddp(dir, {{"vit_adamw", kVit + kWholeBatch + " optim.name=adamw optim.lr=0.001 model.drop_path=0.1"},
                                 {"vit_adamw_checkpointing",
                                  kVit + kWholeBatch + " optim.name=adamw optim.lr=0.001 model.drop_path=0.1 model.grad_checkpointing=true"}});
}

// Clipping scales every gradient by c = max_norm / ||g||, and the sharded strategies sum the squares
// in another order (per shard, then over ranks). For one plain SGD step the weights then differ
// only by lr * |c_ddp - c_sharded| * |g_i| <= lr * max_norm * |dc| / c (as c |g_i| <= max_norm); two
// orders of a sum of n non-negative float32 terms agree within 2 (n - 1) u relatively (u = 2^-24,
// Higham, Accuracy and Stability of Numerical Algorithms, 4.2), the square root halves that, the
// division and the product c g_i round once more on each side: (n + 3) u. Last, w - lr (c g_i) is
// rounded to w's precision, which adds at most one unit in the last place of |w| < 1 (the MLP starts
// within 1/sqrt(fan_in) and one step moves it by at most lr (max_norm + weight decay)): 2^-23. A norm
// over one shard instead of the whole model moves c by tens of percent, far beyond that.
TEST_CASE("a clipped step under zero1, zero2 and fsdp is ddp's within the rounding of the gradient norm", "[e2e][ranks]") {
  TempDir dir;
  const double lr = 0.1, max_norm = 0.05;
  const std::string step = kMlp + " train.max_steps=1 train.micro_batch=32 optim.name=sgd optim.momentum=0 optim.nesterov=false" +
                           fmt::format(" optim.lr={} train.grad_clip={}", lr, max_norm);
  std::string script = train(dir, "unclipped", step + " strategy=ddp train.grad_clip=0");
  for (const char* strategy : kStrategies) script += train(dir, strategy, step + " strategy=" + strategy);
  const Run run = shell(script, dir);
  INFO(run.output);
  REQUIRE(run.output.find("failed") == std::string::npos);
  const auto n = static_cast<double>(cvtrain::testing::checkpoint_numel(weights(dir, "ddp", 1)));
  const double bound = lr * max_norm * (n + 3) * std::ldexp(1.0, -24) + std::ldexp(1.0, -23);
  CHECK(max_checkpoint_difference(weights(dir, "ddp", 1), weights(dir, "unclipped", 1)) > 10 * bound);  // the clip acted
  for (const char* strategy : {"zero1", "zero2", "fsdp"}) {
    INFO(strategy << ": bound " << bound);
    CHECK(max_checkpoint_difference(weights(dir, "ddp", 1), weights(dir, strategy, 1)) <= bound);
  }
}

// train.ema averages what the optimizer updates, so under zero1/zero2/fsdp each rank holds only
// its shard of the average; gathered for evaluation and checkpoints, it must be ddp's bit for bit.
// Without accumulation and clipping every strategy adds in ddp's order (see the first test), and
// the average is one lerp per element, so nothing may round apart.
TEST_CASE("train.ema under zero1, zero2 and fsdp averages each rank's shard and equals ddp's average", "[e2e][ranks]") {
  TempDir dir;
  const std::string ema = " data.max_samples=384 data.max_val_samples=256 train.global_batch=64 train.micro_batch=32 train.epochs=1"
                          " train.grad_clip=0 train.log_every=1 distributed.nproc_per_node=2 optim.name=adamw optim.lr=0.01 train.ema.decay=0.8";
  // Exit 0, or 75 where the run is stopped by a signal after saving a checkpoint.
  const auto run_of = [&](const std::string& name, const std::string& extra, int expected = 0) {
    return "$CVTRAIN --recipe $RECIPE" + ema + extra + " distributed.master_port=" + cvtrain::testing::port() + " output=" + dir.file(name) +
           " >> " + dir.file(name + ".log") + " 2>&1; test $? -eq " + std::to_string(expected) + " || { echo \"" + name + " failed\"; tail -5 " +
           dir.file(name + ".log") + "; }\n";
  };
  std::string script;
  for (const char* strategy : kStrategies) script += run_of(strategy, std::string(" strategy=") + strategy);
  // Stopped under fsdp after 3 steps, resumed under zero2 from the checkpoint it left.
  script += "CVTRAIN_STOP_AT_STEP=3 " + run_of("moved", " strategy=fsdp", 75) + run_of("moved", " strategy=zero2");
  const Run run = shell(script, dir);
  INFO(run.output);
  REQUIRE(run.output.find("failed") == std::string::npos);
  const auto average = [&](const std::string& name) { return dir.file(name + "/checkpoints/step-00000006/ema.safetensors"); };
  const double ddp_top1 = epoch_value(dir, "ddp", "top1_ema");
  CHECK(ddp_top1 > 0.3);  // the average of a model that learns
  for (const char* strategy : {"zero1", "zero2", "fsdp"}) {
    INFO(strategy);
    CHECK(max_checkpoint_difference(average("ddp"), average(strategy)) == 0);
    CHECK(epoch_value(dir, strategy, "top1_ema") == ddp_top1);
  }
  CHECK(max_checkpoint_difference(average("fsdp"), average("moved")) == 0);
  CHECK(read_text(average("ddp")) != read_text(dir.file("ddp/checkpoints/step-00000006/model.safetensors")));
}

// What lets scripts/gpu_check.sh try NCCL's all-gather and reduce-scatter on a single GPU.
TEST_CASE("at world size 1 zero1, zero2 and fsdp run a real process group and step as single does", "[e2e]") {
  TempDir dir;
  // No clipping and no accumulation: the two places where sharded sums may round differently.
  const std::string one_rank = kVit + " optim.name=adamw optim.lr=0.001 model.grad_checkpointing=true" +
                               " distributed.nproc_per_node=1 train.micro_batch=64 train.grad_clip=0";
  std::string script = train(dir, "single", one_rank + " strategy=single");
  for (const char* strategy : {"zero1", "zero2", "fsdp"}) script += train(dir, strategy, one_rank + " strategy=" + strategy);
  const Run run = shell(script, dir);
  INFO(run.output);
  REQUIRE(run.output.find("failed") == std::string::npos);
  CHECK_THAT(read_text(dir.file("single.log")), Catch::Contains("on 1 x cpu (none)") && Catch::Contains("strategy single"));
  for (const std::string strategy : {"zero1", "zero2", "fsdp"}) {
    INFO(strategy);
    CHECK_THAT(read_text(dir.file(strategy + ".log")), Catch::Contains("on 1 x cpu (gloo)") && Catch::Contains("strategy " + strategy));
    CHECK(max_checkpoint_difference(weights(dir, "single", 3), weights(dir, strategy, 3)) == 0);
  }
}

TEST_CASE("a checkpoint of any strategy resumes under any other", "[e2e][ranks]") {
  TempDir dir;
  const std::string adamw = kMlp + " optim.name=adamw optim.lr=0.01";
  // Three steps under one strategy, then the run's checkpoint continued to step 5 under another.
  const std::vector<std::pair<std::string, std::string>> hand_overs = {{"ddp", "fsdp"}, {"fsdp", "zero1"}, {"zero2", "ddp"}, {"zero1", "zero2"}};
  std::string script = train(dir, "straight", adamw + " strategy=ddp");
  for (const auto& [first, second] : hand_overs) {
    const std::string name = first + "_to_" + second;
    script += train(dir, name + "_first", adamw + " strategy=" + first + " train.max_steps=3");
    script += train(dir, name, adamw + " strategy=" + second + " checkpoint.resume=" +
                                   dir.file(name + "_first/checkpoints/step-00000003"));
  }
  const Run run = shell(script, dir);
  INFO(run.output);
  REQUIRE(run.output.find("failed") == std::string::npos);
  for (const auto& [first, second] : hand_overs) {
    const std::string name = first + "_to_" + second;
    INFO(name << ": " << read_text(dir.file(name + ".log")));
    CHECK_THAT(read_text(dir.file(name + ".log")), Catch::Contains("resuming from"));
    CHECK(max_checkpoint_difference(weights(dir, "straight", 5), weights(dir, name, 5)) < 1e-5);
  }
}
