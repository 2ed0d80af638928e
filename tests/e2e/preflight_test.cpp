// `cvtrain preflight` and `preflight: true` end to end on CPU: a rank slowed from outside is named,
// an input pipeline that cannot feed its model is named with data.workers, and a run with preflight
// trains exactly as one without.
#include "torch_catch.h"

#include "image_files.h"
#include "run_shell.h"

using cvtrain::testing::kFindRank1;
using cvtrain::testing::numbers_after;
using cvtrain::testing::read_text;
using cvtrain::testing::shell;
using cvtrain::testing::TempDir;

TEST_CASE("preflight names a rank slowed from outside before any training", "[e2e][ranks]") {
  TempDir dir;
  // Rank 1 is stopped for 60 ms of every 100 from the moment it exists: its matrix products run at
  // well under the other rank's rate.
  const std::string script =
      "$CVTRAIN preflight --recipe $RECIPE distributed.nproc_per_node=2 distributed.master_port=" + cvtrain::testing::port() +
      " output=" + dir.file("run") + " > " + dir.file("preflight.log") + " 2>&1 &\n"
      "launcher=$!\n" + kFindRank1 +
      cvtrain::testing::kSlowDownRank1 +
      "wait $launcher; echo \"exit $?\"\n";
  const cvtrain::testing::Run run = shell(script, dir);
  const std::string log = read_text(dir.file("preflight.log"));
  INFO(run.output << log);
  REQUIRE_THAT(run.output, Catch::Contains("exit 0"));
  CHECK_THAT(log, Catch::Contains("preflight on 2 rank(s), cpu:") && Catch::Contains("all-reduce bus bandwidth"));
  CHECK_THAT(log, Catch::Contains("warning: preflight: slow rank: rank 1 (host "));
  CHECK_THAT(log, !Catch::Contains("slow rank: rank 0"));
  const std::string json = read_text(dir.file("run/preflight.json"));
  CHECK_THAT(json, Catch::Contains("\"kind\": \"slow_rank\""));
  const std::vector<double> rates = numbers_after(json, "matmul_tflops");
  REQUIRE(rates.size() == 2);
  CHECK(rates[1] < 0.8 * rates[0]);
  CHECK_FALSE(std::filesystem::exists(dir.file("run/metrics.jsonl")));  // measured, not trained
}

// [timed]: the two rates it compares are measured on this machine's cores, which a test beside it
// would share (two intra-op threads on a busy core run a tiny MLP a hundred times slower).
TEST_CASE("preflight names an input pipeline too slow for its model, with the data.workers that would keep up", "[e2e][timed]") {
  TempDir dir;
  // Large noisy JPEGs, one decode worker, a tiny MLP at 16 pixels: the model consumes far more
  // images per second than one worker decodes.
  cvtrain::testing::write_noise_jpeg_folder(dir, "images", 32, 1000, 800, 7);
  const std::string recipe = dir.write("r.yaml", "model: {arch: mlp, num_classes: 2, image_size: 16}\n"
                                                 "data: {format: imagefolder, train: " + dir.file("images") + ", workers: 1}\n"
                                                 "train: {epochs: 1, global_batch: 8}\n"
                                                 "optim: {name: sgd, lr: 0.1}\n"
                                                 "output: " + dir.file("run") + "\n");
  const cvtrain::testing::Run run = shell("$CVTRAIN preflight --recipe " + recipe, dir);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.output, Catch::Contains("warning: preflight: input pipeline too slow: rank 0 (host ") &&
                             Catch::Contains("with data.workers: 1, but the model trains on") && Catch::Contains("would keep up"));
  const std::vector<double> pipeline = numbers_after(read_text(dir.file("run/preflight.json")), "pipeline_images_per_s");
  const std::vector<double> model = numbers_after(read_text(dir.file("run/preflight.json")), "model_images_per_s");
  REQUIRE(pipeline.size() == 1);
  REQUIRE(model.size() == 1);
  CHECK(pipeline[0] < model[0]);
}

TEST_CASE("a run with preflight: true measures first and then trains exactly as one without", "[e2e]") {
  TempDir dir;
  const std::string common = "$CVTRAIN --recipe $RECIPE data.max_samples=640 data.max_val_samples=200 train.epochs=1 train.log_every=1 ";
  const cvtrain::testing::Run run =
      shell(common + "preflight=true output=" + dir.file("with") + " && " + common + "output=" + dir.file("without"), dir);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.output, Catch::Contains("preflight on 1 rank(s), cpu:"));
  CHECK(std::filesystem::exists(dir.file("with/preflight.json")));
  const std::vector<double> with = numbers_after(read_text(dir.file("with/metrics.jsonl")), "loss");
  const std::vector<double> without = numbers_after(read_text(dir.file("without/metrics.jsonl")), "loss");
  REQUIRE(with.size() == 5);
  CHECK(with == without);  // same weights, buffers and random streams after the probes
}
