// The metrics.jsonl schema: field names and order of the train and epoch records, the epoch log
// line and the interval arithmetic.
#include <catch2/catch.hpp>

#include <cmath>

#include "cvtrain/observe/interval_stats.h"
#include "cvtrain/observe/metric_records.h"

using namespace cvtrain;

TEST_CASE("a train record lists its fields in the documented order, loss_scale only under fp16", "[observe]") {
  TrainRecord r;
  r.epoch = 2;
  r.step = 50;
  r.loss = 0.5;
  r.lr = 0.1;
  r.images_per_s = 1000;
  r.data_wait = 0.25;
  r.comm_wait = 0.125;
  r.step_s = 0.064;
  r.train_tflops = 1.5;
  CHECK(to_json(r.to_record()) ==
        R"({"kind": "train", "epoch": 2, "step": 50, "loss": 0.5, "lr": 0.1, "images_per_s": 1000, "data_wait": 0.25, )"
        R"("comm_wait": 0.125, "step_s": 0.064, "train_tflops": 1.5})");
  r.loss_scale = 65536;
  r.loss = std::nan("");
  const std::string fp16 = to_json(r.to_record());
  CHECK_THAT(fp16, Catch::Contains(R"("loss": null)") && Catch::EndsWith(R"("train_tflops": 1.5, "loss_scale": 65536})"));
}

TEST_CASE("an epoch record carries the memory report and, with validation data, the evaluation", "[observe]") {
  EpochRecord r;
  r.epoch = 1;
  r.step = 10;
  r.train_loss = 1.25;
  r.epoch_s = 2;
  r.images_per_s = 320;
  r.data_wait = 0.5;
  r.bad_samples = 3;
  r.skipped_steps = 1;
  r.memory = MemoryReport{1.5, 3, {10, 12.25}, false};
  CHECK(r.memory.peak_mb() == 12.25);
  CHECK(to_json(r.to_record()) ==
        R"({"kind": "epoch", "epoch": 1, "step": 10, "train_loss": 1.25, "epoch_s": 2, "images_per_s": 320, "data_wait": 0.5, )"
        R"("bad_samples": 3, "skipped_steps": 1, "param_mb": 1.5, "optimizer_state_mb": 3, "peak_memory_mb": 12.25, )"
        R"("peak_memory_mb_per_rank": "10.0 12.2"})");
  CHECK(r.log_line() ==
        "epoch 1 train loss 1.2500, 320 img/s, per rank: parameters 1.5 MB, optimizer state 3.0 MB, peak RSS 12 MB above start");
  r.eval = EvalFigures{0.75, {{"top1", 0.875}, {"top5", 0.9375}}, 1.5};
  r.memory.device_allocator = true;
  CHECK_THAT(to_json(r.to_record()), Catch::EndsWith(R"("val_loss": 0.75, "top1": 0.875, "top5": 0.9375, "eval_s": 1.5})"));
  CHECK_THAT(r.log_line(), Catch::Contains("peak allocated 12 MB") && Catch::EndsWith(", val loss 0.7500 top-1 0.8750 top-5 0.9375"));
  // With timed steps: the breakdown's fields after the memory report, and its line at the end.
  PhaseSeconds step;
  step[Phase::kForward] = 0.25;
  step[Phase::kBackward] = 0.75;
  r.breakdown.add_step(step);
  CHECK_THAT(to_json(r.to_record()), Catch::Contains(R"("peak_memory_mb_per_rank": "10.0 12.2", "breakdown_steps": 1, "data_frac": 0, )"
                                                     R"("data_s": 0, "copy_frac": 0, "copy_s": 0, "forward_frac": 0.25, "forward_s": 0.25, )"));
  CHECK_THAT(r.log_line(), Catch::EndsWith("; step time: data 0% copy 0% forward 25% backward 75% comm 0% optimizer 0% other 0%"));
}

TEST_CASE("interval fractions are taken against the elapsed time given", "[observe]") {
  IntervalStats stats;
  stats.add_step(0.5, 0.25, 64);
  stats.add_step(1.5, 0.25, 64);
  CHECK(stats.steps() == 2);
  CHECK(stats.images() == 128);
  CHECK(stats.data_wait(4.0) == 0.5);
  CHECK(stats.comm_wait(4.0) == 0.125);
  CHECK(stats.images_per_s(4.0) == 32);
  CHECK(stats.step_s(4.0) == 2);
  stats.restart();
  CHECK(stats.steps() == 0);
  CHECK(stats.step_s(4.0) == 0);
  CHECK(std::isnan(mean_or_nan(1, 0)));
  CHECK(mean_or_nan(3, 2) == 1.5);
}
