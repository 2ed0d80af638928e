// The preflight probes (see preflight.h): each timed for about half a second after a warm-up.
#include "cvtrain/tools/preflight.h"

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>

#include <filesystem>
#include <functional>

#include "cvtrain/build_config.h"
#include "cvtrain/comm/communicator.h"
#include "cvtrain/core/log.h"
#include "cvtrain/core/timer.h"
#include "cvtrain/data/pipeline_bench.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/observe/memory.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/train/model_snapshot.h"
#include "cvtrain/train/precision.h"
#include "cvtrain/train/run_builder.h"
#include "cvtrain/train/run_directory.h"

#if CVTRAIN_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace cvtrain {
namespace {

constexpr double kProbeSeconds = 0.5;
constexpr int64_t kMaxAllReduceBytes = int64_t{64} << 20;

void synchronize(const c10::Device& device) {
#if CVTRAIN_WITH_CUDA
  if (device.is_cuda()) c10::cuda::device_synchronize();
#endif
  (void)device;
}

// Calls of `body` per second: one warm-up call, then as many as fit in kProbeSeconds (at least
// two). Local work only: the count differs from rank to rank.
double calls_per_second(const c10::Device& device, const std::function<void()>& body) {
  body();
  synchronize(device);
  Stopwatch clock;
  int64_t calls = 0;
  while (calls < 2 || clock.seconds() < kProbeSeconds) {
    body();
    synchronize(device);
    ++calls;
  }
  return static_cast<double>(calls) / clock.seconds();
}

// Random tensors from a generator of their own: the run's random streams are not touched.
at::Tensor random_normal(at::IntArrayRef shape, const at::TensorOptions& options) {
  static at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(0x70726566);
  return at::randn(shape, generator, at::kFloat).to(options);
}

at::ScalarType matmul_dtype(const PreflightParts& run, Precision precision) {
  if (!run.device.is_cuda()) return at::kFloat;
  if (precision == Precision::kBf16) return at::kBFloat16;
  if (precision == Precision::kFp16) return at::kHalf;
  return at::kFloat;  // tf32 where the recipe enabled it (configure_tf32)
}

double matmul_tflops(const PreflightParts& run, const Recipe& recipe) {
  const int64_t n = run.device.is_cuda() ? 8192 : 1024;
  const at::TensorOptions options = at::TensorOptions(run.device).dtype(matmul_dtype(run, recipe.precision));
  const at::Tensor a = random_normal({n, n}, options), b = random_normal({n, n}, options);
  at::Tensor c = at::empty({n, n}, options);
  const double rate = calls_per_second(run.device, [&] { at::mm_out(c, a, b); });
  return rate * 2.0 * static_cast<double>(n * n * n) / 1e12;
}

std::optional<double> host_to_device_gbps(const PreflightParts& run) {
  if (!run.device.is_cuda()) return std::nullopt;
  constexpr int64_t kBytes = int64_t{256} << 20;
  const at::Tensor host = at::empty({kBytes}, at::TensorOptions(at::kByte).pinned_memory(true));
  at::Tensor device = at::empty({kBytes}, at::TensorOptions(run.device).dtype(at::kByte));
  return calls_per_second(run.device, [&] { device.copy_(host, /*non_blocking=*/true); }) * static_cast<double>(kBytes) / 1e9;
}

// None for synthetic data: its batches are made on the device, with no pipeline to measure.
std::optional<double> pipeline_images_per_s(const PreflightParts& run, const Recipe& recipe) {
  if (recipe.data.format == DataFormat::kSynthetic) return std::nullopt;
  PipelineBenchOptions options;
  options.workers = run.plan.workers.value_or(0);
  options.batch_size = std::min<int64_t>(run.plan.batch.micro, static_cast<int64_t>(run.data.train->size()));
  options.image_size = recipe.model.image_size;
  options.batches = std::clamp<int64_t>(1024 / std::max<int64_t>(1, options.batch_size), 4, 64);
  options.prefetch = recipe.data.prefetch;
  options.random_resized_crop = recipe.augment.random_resized_crop;
  options.hflip = recipe.augment.hflip.on();
  options.interpolation = name_of(recipe.augment.interpolation);
  options.seed = static_cast<uint64_t>(recipe.train.seed);
  options.device = run.device;
  options.decoder = run.jpeg_decoder ? "nvjpeg" : "cpu";  // data.decoder as resolved for this run
  return bench_pipeline(*run.data.train, options).images_per_s;
}

// Forward and backward at the recipe's micro-batch and precision, on random images.
double model_images_per_s(PreflightParts& run, const Recipe& recipe) {
  const ModelSnapshot snapshot(*run.model, run.device);
  run.model->train();
  const int64_t micro = run.plan.batch.micro, side = recipe.model.image_size;
  const at::Tensor images = random_normal({micro, run.channels, side, side}, at::TensorOptions(run.device))
                                .contiguous(run.feed.channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous);
  const at::Tensor labels = at::randint(recipe.model.num_classes, {micro}, at::TensorOptions(run.device).dtype(at::kLong));
  const double rate = calls_per_second(run.device, [&] {
    at::Tensor logits;
    {
      AutocastScope autocast(run.plan.precision, run.device.type());
      logits = run.model->forward(images);
    }
    torch::nn::functional::cross_entropy(logits.to(at::kFloat), labels).backward();
  });
  run.model->zero_grad(/*set_to_none=*/true);
  reset_peak_memory(run.device);  // the run's memory report is about training
  return rate * static_cast<double>(micro);
}

double gradient_mb(const PreflightParts& run) {
  int64_t bytes = 0;
  for (const auto& p : run.model->parameters())
    if (p.requires_grad()) bytes += p.numel() * static_cast<int64_t>(p.element_size());
  return static_cast<double>(bytes) / 1e6;
}

// Bus bandwidth as nccl-tests defines it for all-reduce: 2 (n - 1) / n x bytes / time. A fixed
// number of calls, the same on every rank (a count each rank chose by its own clock would leave
// the faster ones in an all-reduce the others never join).
double allreduce_bus_gbps(const PreflightParts& run, int64_t bytes) {
  constexpr int64_t kCalls = 8;
  at::Tensor tensor = at::ones({bytes / 4}, at::TensorOptions(run.device).dtype(at::kFloat));
  run.comm->all_reduce_sum(tensor, "preflight all-reduce");  // warm-up: connections, buffers
  synchronize(run.device);
  Stopwatch clock;
  for (int64_t i = 0; i < kCalls; ++i) run.comm->all_reduce_sum(tensor, "preflight all-reduce");
  synchronize(run.device);
  const double rate = static_cast<double>(kCalls) / clock.seconds();
  const auto n = static_cast<double>(run.comm->world_size());
  return 2 * (n - 1) / n * static_cast<double>(bytes) * rate / 1e9;
}

// Every rank's four figures, on every rank (one all-gather; -1 stands for "not measured").
std::vector<RankProbe> gather_probes(const PreflightParts& run, const RankProbe& mine) {
  constexpr int64_t kFields = 4;
  const std::vector<double> values{mine.matmul_tflops, mine.h2d_gbps.value_or(-1), mine.pipeline_images_per_s.value_or(-1),
                                   mine.model_images_per_s};
  const at::Tensor local = at::tensor(values, at::kDouble).to(run.device);
  at::Tensor all = at::zeros({run.comm->world_size() * kFields}, local.options());
  if (run.comm->world_size() > 1)
    run.comm->all_gather(all, local, "all-gather of the preflight figures");
  else
    all.copy_(local);
  const at::Tensor host = all.cpu();
  const double* v = host.data_ptr<double>();
  std::vector<RankProbe> probes;
  for (int r = 0; r < run.comm->world_size(); ++r) {
    const double* row = v + r * kFields;
    RankProbe p;
    p.label = r < static_cast<int>(run.perf.rank_labels.size()) ? run.perf.rank_labels[static_cast<size_t>(r)] : fmt::format("rank {}", r);
    p.matmul_tflops = row[0];
    if (row[1] >= 0) p.h2d_gbps = row[1];
    if (row[2] >= 0) p.pipeline_images_per_s = row[2];
    p.model_images_per_s = row[3];
    probes.push_back(std::move(p));
  }
  return probes;
}

}  // namespace

PreflightResults run_preflight(PreflightParts& run, const Recipe& recipe) {
  if (run.comm->rank() == 0) log::info("preflight: measuring every rank for a few seconds before training");
  RankProbe mine;
  mine.matmul_tflops = matmul_tflops(run, recipe);
  mine.h2d_gbps = host_to_device_gbps(run);
  mine.pipeline_images_per_s = pipeline_images_per_s(run, recipe);
  mine.model_images_per_s = model_images_per_s(run, recipe);
  PreflightResults results;
  results.gradient_mb = gradient_mb(run);
  results.device = run.perf.device_name;
  if (run.comm->world_size() > 1) {
    const int64_t bytes = std::clamp<int64_t>(static_cast<int64_t>(results.gradient_mb * 1e6), int64_t{1} << 20, kMaxAllReduceBytes);
    results.allreduce_mb = static_cast<double>(bytes) / 1e6;
    results.bus_gbps = allreduce_bus_gbps(run, bytes / 4 * 4);
  }
  results.ranks = gather_probes(run, mine);
  if (run.comm->rank() == 0) {
    const std::vector<Verdict> findings = preflight_findings(results, recipe, run.plan);
    std::fputs(preflight_table(results).c_str(), stdout);
    std::fflush(stdout);
    for (const Verdict& f : findings) log::warn("preflight: {}", f.message);
    if (findings.empty()) log::info("preflight: no finding; nothing measured here will hold the job back");
    std::filesystem::create_directories(recipe.output);
    write_file_atomically((std::filesystem::path(recipe.output) / "preflight.json").string(), preflight_json(results, findings));
  }
  return results;
}

}  // namespace cvtrain
