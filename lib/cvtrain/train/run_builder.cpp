// Builds the parts of a run (see run_builder.h). The order of the calls in build_run is the order
// of the side effects; random draws (initialisation) follow torch::manual_seed as in PyTorch.
#include "cvtrain/train/run_builder.h"

#include <ATen/ATen.h>
#include <ATen/DeviceAccelerator.h>
#include <torch/cuda.h>
#include <torch/optim/optimizer.h>
#include <torch/utils.h>
#include <torch/version.h>

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "cvtrain/comm/communicator.h"
#include "cvtrain/core/cpu_budget.h"
#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/core/text.h"
#include "cvtrain/core/this_machine.h"
#include "cvtrain/data/decoder_choice.h"
#include "cvtrain/data/jpeg_batch_decoder.h"
#include "cvtrain/data/sample_pipeline.h"
#include "cvtrain/launch/heartbeat.h"
#include "cvtrain/launch/rank_environment.h"
#include "cvtrain/launch/stop_request.h"
#include "cvtrain/models/arch_traits.h"
#include "cvtrain/models/classifier.h"
#include "cvtrain/models/flops.h"
#include "cvtrain/models/pretrained.h"
#include "cvtrain/observe/device_info.h"
#include "cvtrain/observe/device_peaks.h"
#include "cvtrain/observe/memory.h"
#include "cvtrain/observe/metrics_log.h"
#include "cvtrain/observe/provenance.h"
#include "cvtrain/optim/layer_decay.h"
#include "cvtrain/optim/lr_mult.h"
#include "cvtrain/optim/lr_schedule.h"
#include "cvtrain/optim/optimizer.h"
#include "cvtrain/parallel/flat_shard.h"
#include "cvtrain/parallel/strategy.h"
#include "cvtrain/recipe/batch_plan.h"
#include "cvtrain/recipe/recipe.h"
#include "cvtrain/recipe/recipe_checks.h"
#include "cvtrain/recipe/task_checks.h"
#include "cvtrain/train/checkpoint.h"
#include "cvtrain/train/loss_scaler.h"
#include "cvtrain/train/micro_batch.h"
#include "cvtrain/train/precision.h"
#include "cvtrain/train/run_directory.h"
#include "cvtrain/train/run_profiler.h"
#include "cvtrain/train/task.h"

namespace cvtrain {
namespace {

c10::Device choose_device(DeviceKind requested, const RankInfo& rank) {
  const bool cuda = torch::cuda::is_available();
  if (requested == DeviceKind::kCuda && !cuda) throw Error("device: cuda requested but no CUDA device is visible");
  if (requested == DeviceKind::kCpu || !cuda) return c10::Device(c10::kCPU);
  const int count = static_cast<int>(torch::cuda::device_count());
  if (rank.local_rank >= count)
    throw Error(fmt::format("rank {} is local rank {} but this node sees only {} CUDA device(s)", rank.rank, rank.local_rank, count));
  const auto index = static_cast<c10::DeviceIndex>(rank.local_rank);
  // LibTorch, unlike torch.cuda in Python, initialises CUDA only at the first CUDA tensor; the allocator's
  // statistics are read before that. The current device is the rank's, as torchrun scripts set it, for
  // whatever is created without naming one (NCCL communicators, library handles).
  at::globalContext().lazyInitDevice(c10::kCUDA);
  at::accelerator::setDeviceIndex(index);
  return c10::Device(c10::kCUDA, index);
}

// The cores of this node for its ranks: those the job was given (affinity, Slurm's CPUs per task),
// not the machine's count.
unsigned node_cores(const RankInfo& rank) { return cores_for_local_ranks(process_environment(), rank.local_world_size, usable_cpus()); }

// Ranks on one node split its cores, as torchrun does with OMP_NUM_THREADS, unless the user set it:
// two ranks each running a thread per core would fight over every core.
void share_cores(const RankInfo& rank) {
  if (rank.local_world_size <= 1 || std::getenv("OMP_NUM_THREADS")) return;
  at::set_num_threads(std::max(1, static_cast<int>(node_cores(rank)) / rank.local_world_size));
}

std::unique_ptr<Communicator> join_group(const DistributedSpec& spec, StrategyKind strategy, const RankInfo& rank,
                                         const c10::Device& device) {
  std::string backend = spec.backend;
  if (backend == "auto") backend = device.is_cuda() ? "nccl" : "gloo";
  // Every strategy but single builds its process group, even for one rank: that is how NCCL's or
  // Gloo's all-reduce (ddp) and all-gather and reduce-scatter (zero, fsdp) get checked on a single
  // device; single never does.
  return connect(GroupSpec{rank.rank, rank.world_size, rank.master_addr, rank.master_port, backend, std::chrono::seconds(spec.timeout_s),
                           !strategy_traits(strategy).one_process, rank.agent_store, rank.attempt});
}

}  // namespace

LoaderOptions loader_options(const DataSpec& data, const TrainSpec& train, int64_t image_size, const c10::Device& device,
                             const RankInfo& rank) {
  LoaderOptions options;
  options.batch_size = train.micro_batch;
  options.workers = worker_threads(data.workers, rank.local_world_size, device.is_cuda());
  options.prefetch = data.prefetch;
  options.pin_memory = wants_pinned_memory(device);
  options.transform.image_size = image_size;
  options.transform.seed = static_cast<uint64_t>(train.seed);
  options.transform.max_image_pixels = data.max_image_pixels;
  options.transform.crop_fraction = data.eval_crop_fraction;
  options.transform.eval_filter = resize_filter(data.eval_interpolation);
  return options;
}

FeedOptions feed_options(const DataSpec& data, const PrecisionPolicy& precision, const c10::Device& device) {
  FeedOptions options;
  options.device = device;
  if (precision.bf16_inputs() && device.is_cuda()) options.dtype = at::kBFloat16;
  options.mean = data.mean;
  options.std = data.std;
  return options;
}

namespace {

void log_pretrained(const ModelSpec& spec, const PretrainedReport& report) {
  log::info("weights from {}{}{}", spec.pretrained,
            report.reinitialised.empty()
                ? ""
                : "; new head for " + std::to_string(spec.num_classes) + " classes: " + join(report.reinitialised, ", "),
            report.position_embedding_resized ? "; position embedding interpolated to the new image size" : "");
  if (report.encoder_only)
    log::info("{} holds the encoder alone: its classifier ({}) dropped, the decoder's {} tensors start from their initialisation",
              spec.pretrained, report.dropped_head.empty() ? "none" : join(report.dropped_head, ", "), report.decoder.size());
  if (!report.missing.empty()) log::warn("not in {} (left as initialised): {}", spec.pretrained, join(report.missing, ", "));
  if (!report.unexpected.empty()) log::warn("in {} but not in the model (ignored): {}", spec.pretrained, join(report.unexpected, ", "));
}

// Convolution weights in NHWC order, matching channels_last inputs (no layout conversions per step).
void to_channels_last(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  for (auto& p : model.parameters())
    if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
}

// The model on the device, initialised from the seed, or from pretrained weights.
std::shared_ptr<Classifier> build_run_model(const ModelSpec& spec, int64_t channels, const c10::Device& device, bool log) {
  std::shared_ptr<Classifier> model = build_model(spec, channels);
  if (!spec.pretrained.empty()) {
    const PretrainedReport report = load_pretrained(*model, spec.pretrained, spec.pretrained_strict);
    if (log) log_pretrained(spec, report);
  }
  model->to(device);
  return model;
}

// train.micro_batch: auto: each rank probes its GPU with the model as it is (before the
// strategy's hooks), keeping room for the optimizer state to come; all take the smallest choice.
int64_t probe_micro_batch(Classifier& model, MicroBatchProbe probe, const OptimSpec& optim, int64_t per_rank, Communicator& comm) {
  const bool adam_like = optim.name == OptimizerKind::kAdamw || optim.name == OptimizerKind::kLamb;
  const int64_t moments = adam_like ? 2 : optim.momentum > 0 ? 1 : 0;
  probe.reserved_bytes = moments * parameter_bytes(model);
  int64_t chosen = find_micro_batch(model, per_rank, probe);
  if (comm.world_size() > 1) {
    at::Tensor all = at::zeros({comm.world_size()}, at::TensorOptions(probe.device).dtype(at::kDouble));
    comm.all_gather(all, at::full({1}, static_cast<double>(chosen), all.options()), "all-gather of the chosen micro-batch");
    chosen = static_cast<int64_t>(all.min().item<double>());
  }
  if (comm.rank() == 0)
    log::info(
        "train.micro_batch: auto chose {} (the largest divisor of {} images per rank that fits with {:.0f}% of the GPU to "
        "spare); accumulation {}",
        chosen, per_rank, probe.margin * 100, per_rank / chosen);
  return chosen;
}

// train.micro_batch: auto resolved into the plan (and the loader) from this run's GPU.
void choose_micro_batch(PreflightParts& run, const Recipe& recipe) {
  MicroBatchProbe probe;
  probe.device = run.device;
  probe.channels = run.channels;
  probe.image_size = square_side_of_training_input(recipe);
  probe.precision = run.plan.precision;
  probe.channels_last = run.feed.channels_last;
  const ArchTraits* arch = arch_traits(recipe.model.arch);
  probe.min_micro_batch = arch && arch->pooled_batch_norm ? 2 : 1;
  const BatchPlan& provisional = run.plan.batch;  // micro = global / world until now
  run.plan.batch = provisional.with_micro_batch(probe_micro_batch(*run.model, probe, recipe.optim, provisional.per_rank(), *run.comm));
  run.plan.micro_batch_left = false;
  run.loader.batch_size = run.plan.batch.micro;
}

// optim.layer_decay and optim.lr_mult: each tensor's learning-rate scale by its parameter's name
// (single and ddp hand the optimizer the model's own parameters; the recipe refuses the sharding strategies).
void attach_lr_scales(ParameterGroups& groups, Classifier& model, const Recipe& recipe) {
  const bool layer_decay = recipe.optim.layer_decay > 0;
  if (layer_decay && !has_layer_grouping(recipe.model.arch))
    throw RecipeError({fmt::format("{}: model.arch {} has no layer grouping for it (vit_*, convnext_*, resnet*)",
                                   recipe.where("optim.layer_decay"), recipe.model.arch)});
  std::vector<std::string> names;
  std::vector<at::Tensor> tensors;
  for (const auto& p : model.named_parameters()) {
    names.push_back(p.key());
    tensors.push_back(p.value());
  }
  std::vector<double> scales = lr_mult_scales(names, recipe.optim.lr_mult);
  if (layer_decay) {
    const std::vector<double> decayed = layer_decay_scales(names, recipe.model.arch, recipe.optim.layer_decay);
    for (size_t i = 0; i < scales.size(); ++i) scales[i] *= decayed[i];
  }
  const auto scale_of = [&](const at::Tensor& t) {
    for (size_t i = 0; i < tensors.size(); ++i)
      if (tensors[i].is_same(t)) return scales[i];
    throw Error("optim.layer_decay, optim.lr_mult: the optimizer holds a tensor that is no parameter of the model");
  };
  for (const at::Tensor& t : groups.decay) groups.decay_scales.push_back(scale_of(t));
  for (const at::Tensor& t : groups.no_decay) groups.no_decay_scales.push_back(scale_of(t));
}

// The strategy wraps the model (broadcasting rank 0's weights); the optimizer updates what the
// strategy hands it; the schedule spans the run's steps.
void build_optimization(TrainingRun& run, const Recipe& recipe) {
  run.strategy = make_strategy(run.plan.strategy, *run.model, *run.comm, recipe.distributed.bucket_mb, recipe.model.sync_bn);
  ParameterGroups groups = run.strategy->optimizer_parameters();
  if (recipe.optim.layer_decay > 0 || !recipe.optim.lr_mult.empty()) attach_lr_scales(groups, *run.model, recipe);
  OptimSpec planned = recipe.optim;  // the section with the plan's path (auto under train.cuda_graphs is fused)
  planned.implementation = run.plan.optimizer_path;
  run.optimizer = build_optimizer(planned, groups);
  run.scaler = std::make_unique<LossScaler>(run.plan.precision.loss_scaling(), run.device);
  const RunLength length = RunLength::of(run.data.train->size(), recipe.train);
  run.steps_per_epoch = length.steps_per_epoch;
  run.total_steps = length.total_steps;
  run.schedule = std::make_unique<LrSchedule>(recipe.schedule, recipe.optim.lr, run.steps_per_epoch, run.total_steps);
}

// Rank 0, the only writer, prepares the run folder: an unwritable or blocked output fails now,
// not at the first save.
void prepare_output(TrainingRun& run, const Recipe& recipe) {
  run.folder = std::make_unique<RunDirectory>(recipe.output, recipe);
  Checkpointer(recipe.output, recipe.checkpoint.keep).check_writable();
  run.metrics = std::make_unique<MetricsLog>(run.folder->file("metrics.jsonl"), recipe.output);  // and TensorBoard events
}

// provenance.json, for `cvtrain report` and for telling runs apart: this start's command, versions and ranks.
void write_provenance(const TrainingRun& run) {
  Provenance p = this_process_provenance();
  p.libtorch_version = TORCH_VERSION;
  p.cuda_runtime = cuda_runtime_version();
  p.nccl_version = nccl_version();
  p.device = run.perf.device_name;
  p.world_size = run.perf.world_size;
  p.ranks = run.perf.rank_labels;
  p.cores = run.perf.cores;
  p.data_workers = run.loader.workers;
  p.plan = run.plan.rows();
  run.folder->write("provenance.json", provenance_json(p));
}

// The plan for this job and the device it runs on.
void start_on_device(InferenceParts& run, const Recipe& recipe, const RankInfo& rank) {
  run.plan = RunPlan::of(recipe, rank.world_size);
  run.device = choose_device(recipe.device, rank);
  run.plan.device = run.device.str();
}

// The data (train and val, or val alone) and what its loader and feeder are told.
void open_data_and_loader(EvaluationParts& run, const Recipe& recipe, const RankInfo& rank, RunData (*open_data)(const Recipe&)) {
  run.data = open_data(recipe);
  run.task = make_task(recipe);
  run.channels = run.data.channels;
  run.loader = loader_options(recipe.data, recipe.train, recipe.model.image_size, run.device, rank);
  run.feed = feed_options(recipe.data, run.plan.precision, run.device);
}

// The model on the device in its layout, for run.channels.
void build_model_on_device(InferenceParts& run, const Recipe& recipe, bool log) {
  torch::manual_seed(static_cast<uint64_t>(recipe.train.seed));
  configure_tf32(run.plan.precision);
  // Off by default, as in PyTorch: timed choices differ from run to run, and on an H200 they made
  // ResNet-50 no faster than cuDNN's heuristics (docs/benchmarks.md, "On one H200"). Unusual shapes may gain.
  at::globalContext().setBenchmarkCuDNN(recipe.train.cudnn_benchmark);
  run.model = build_run_model(recipe.model, run.channels, run.device, log);
  run.feed.channels_last = recipe.train.channels_last && run.model->is_convolutional();
  if (run.feed.channels_last) to_channels_last(*run.model);
}

// The process group, then the model on the device in its layout.
void join_and_build_model(EvaluationParts& run, const Recipe& recipe, const RankInfo& rank) {
  install_stop_handlers();
  share_cores(rank);
  run.comm = join_group(recipe.distributed, run.plan.strategy, rank, run.device);
  set_collective_wait_listener(&report_collective);  // the hang watch learns what the peers of a stuck rank wait in
  build_model_on_device(run, recipe, rank.rank == 0);
}

// data.decoder for the training samples: with a device decoder, the loader leaves the files it
// takes encoded for it (epoch_input.h).
void choose_training_decoder(PreflightParts& run, const Recipe& recipe, bool log) {
  if (!run.task->decodes_on_device()) {
    run.plan.decoder = "cpu (the workers decode)";
    return;
  }
  SampleTransform transform = run.loader.transform;
  transform.augment = &recipe.augment;
  const DecoderChoice choice = choose_decoder(recipe.data.decoder, recipe.data.format, *run.data.train, transform, run.device);
  if (log) log::info("{}", choice.summary);
  run.plan.decoder = choice.device ? "nvjpeg (JPEGs decoded on the GPU)" : "cpu (the workers decode)";
  run.jpeg_decoder = choice.device;
  if (JpegBatchDecoder* decoder = run.jpeg_decoder.get())
    run.loader.keep_encoded = [decoder](const std::vector<uint8_t>& bytes) { return decoder->takes(bytes); };
}

// The loader's decode threads, in the plan that the profiler's advice and preflight read; data.workers:
// auto is told once.
void resolve_workers(InferenceParts& run, const Recipe& recipe, const RankInfo& rank) {
  run.plan.workers = run.loader.workers;
  if (!recipe.data.workers.automatic) return;
  if (rank.rank == 0)
    log::info("data.workers: auto, {} decode thread(s) per rank ({} core(s) for {} rank(s) on this node, {})", run.loader.workers,
              node_cores(rank), rank.local_world_size,
              run.device.is_cuda() ? "one per rank left to its training thread" : "half left to training, which computes on them");
}

// What training and preflight open first: the device (its memory in use before anything of the
// run's), the data, the workers and the decoder.
void open_training_input(PreflightParts& run, const Recipe& recipe, const RankInfo& rank) {
  start_on_device(run, recipe, rank);
  run.memory_at_start = current_memory_bytes(run.device);
  open_data_and_loader(run, recipe, rank, &open_run_data);
  resolve_workers(run, recipe, rank);
  choose_training_decoder(run, recipe, rank.rank == 0);
}

// Then the process group, the model, train.micro_batch: auto and the ranks' names.
void build_measured_model(PreflightParts& run, const Recipe& recipe, const RankInfo& rank) {
  join_and_build_model(run, recipe, rank);
  run.flops_per_image = forward_flops_per_image(*run.model, run.channels, square_side_of_training_input(recipe));
  if (recipe.train.micro_batch_auto) choose_micro_batch(run, recipe);
  run.perf = job_perf_context(recipe, rank, run.device, *run.comm);
  run.perf.gradient_mb = static_cast<double>(parameter_bytes(*run.model)) / (1024.0 * 1024.0);
}

}  // namespace

EvaluationParts::EvaluationParts() = default;
EvaluationParts::EvaluationParts(EvaluationParts&&) noexcept = default;
EvaluationParts::~EvaluationParts() = default;
TrainingRun::TrainingRun() = default;
TrainingRun::TrainingRun(TrainingRun&&) noexcept = default;
TrainingRun::~TrainingRun() = default;

PreflightParts build_preflight_parts(const Recipe& recipe, const RankInfo& rank) {
  PreflightParts run;
  open_training_input(run, recipe, rank);
  build_measured_model(run, recipe, rank);
  return run;
}

EvaluationParts build_evaluation_parts(const Recipe& recipe, const RankInfo& rank) {
  EvaluationParts run;
  start_on_device(run, recipe, rank);
  open_data_and_loader(run, recipe, rank, &open_eval_data);
  join_and_build_model(run, recipe, rank);
  return run;
}

InferenceParts build_inference_parts(const Recipe& recipe, int64_t channels) {
  InferenceParts run;
  start_on_device(run, recipe, RankInfo{});
  run.channels = channels;
  run.loader = loader_options(recipe.data, recipe.train, recipe.model.image_size, run.device, RankInfo{});
  run.plan.workers = run.loader.workers;
  run.feed = feed_options(recipe.data, run.plan.precision, run.device);
  build_model_on_device(run, recipe, true);
  return run;
}

// Rank 0 prepares the run folder after the data's checks and before any time goes to the group.
TrainingRun build_run(const Recipe& recipe, const RankInfo& rank, const BeforeStrategy& before_strategy) {
  TrainingRun run;
  open_training_input(run, recipe, rank);
  if (rank.rank == 0) prepare_output(run, recipe);
  build_measured_model(run, recipe, rank);
  if (before_strategy) before_strategy(run);
  build_optimization(run, recipe);
  if (rank.rank == 0) write_provenance(run);
  if (rank.rank == 0) {
    for (const std::string& warning : recipe_warnings(recipe)) log::warn("{}", warning);
    for (const std::string& note : run.data.notes) log::info("{}", note);
    for (const std::string& warning : data_warnings(run.data, recipe)) log::warn("{}", warning);
  }
  return run;
}

}  // namespace cvtrain
