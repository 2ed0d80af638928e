// The typed recipe: one struct per section, every field with its default, every choice an
// enumeration (with the recipe's spelling of each value beside it). Torch- and YAML-free.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cvtrain/recipe/augment_policy.h"

namespace cvtrain {

enum class Precision { kFp32, kTf32, kBf16, kFp16 };
enum class StrategyKind { kAuto, kSingle, kDdp, kZero1, kZero2, kFsdp };  // kAuto stays; the run plan resolves it
enum class DeviceKind { kAuto, kCpu, kCuda };
enum class TaskKind { kClassification, kSegmentation };
enum class DataFormat {
  kIdx,
  kImageFolder,
  kShards,
  kSynthetic,
  kList,
  kVoc,
  kAde20k,
  kCityscapes,
  kAuto
};  // kAuto is resolved when the recipe loads
enum class DecoderKind { kCpu, kNvjpeg, kAuto };
enum class OptimizerKind { kSgd, kAdamw, kLamb, kLars };
enum class OptimImplementation { kAuto, kForeach, kFused };
enum class ScheduleKind { kCosine, kStep, kConstant, kPoly };
enum class EvalMode { kWhole, kSlide };
enum class ResumeMode { kAuto, kNone, kFolder };
enum class BestMetric { kAuto, kTop1, kTop1Ema, kMiou, kMiouEma, kNone };
enum class ProfileTool { kKineto, kNsys };
enum class AugmentInterpolation { kRandom, kBilinear, kBicubic };
enum class EraseMode { kConst, kRand, kPixel };
enum class LossKind { kCe, kBce };

// The recipe's names of an enumeration's values, in the enumeration's order.
template <class E>
struct EnumNames;
template <>
struct EnumNames<Precision> {
  static constexpr std::array<const char*, 4> names{"fp32", "tf32", "bf16", "fp16"};
};
template <>
struct EnumNames<StrategyKind> {
  static constexpr std::array<const char*, 6> names{"auto", "single", "ddp", "zero1", "zero2", "fsdp"};
};
template <>
struct EnumNames<DeviceKind> {
  static constexpr std::array<const char*, 3> names{"auto", "cpu", "cuda"};
};
template <>
struct EnumNames<TaskKind> {
  static constexpr std::array<const char*, 2> names{"classification", "segmentation"};
};
template <>
struct EnumNames<DataFormat> {
  static constexpr std::array<const char*, 9> names{"idx", "imagefolder", "shards",     "synthetic", "list",
                                                    "voc", "ade20k",      "cityscapes", "auto"};
};
template <>
struct EnumNames<DecoderKind> {
  static constexpr std::array<const char*, 3> names{"cpu", "nvjpeg", "auto"};
};
template <>
struct EnumNames<BestMetric> {
  static constexpr std::array<const char*, 6> names{"auto", "top1", "top1_ema", "miou", "miou_ema", "none"};
};
template <>
struct EnumNames<OptimizerKind> {
  static constexpr std::array<const char*, 4> names{"sgd", "adamw", "lamb", "lars"};
};
template <>
struct EnumNames<OptimImplementation> {
  static constexpr std::array<const char*, 3> names{"auto", "foreach", "fused"};
};
template <>
struct EnumNames<ScheduleKind> {
  static constexpr std::array<const char*, 4> names{"cosine", "step", "constant", "poly"};
};
template <>
struct EnumNames<EvalMode> {
  static constexpr std::array<const char*, 2> names{"whole", "slide"};
};
template <>
struct EnumNames<ProfileTool> {
  static constexpr std::array<const char*, 2> names{"kineto", "nsys"};
};

template <>
struct EnumNames<AugmentInterpolation> {
  static constexpr std::array<const char*, 3> names{"random", "bilinear", "bicubic"};
};
template <>
struct EnumNames<LossKind> {
  static constexpr std::array<const char*, 2> names{"ce", "bce"};
};
template <>
struct EnumNames<EraseMode> {
  static constexpr std::array<const char*, 3> names{"const", "rand", "pixel"};
};

template <class E>
std::string name_of(E value) {
  return EnumNames<E>::names[static_cast<size_t>(value)];
}

// The value a recipe spells `name`; nullopt for a name not in the list.
template <class E>
std::optional<E> enum_of(const std::string& name) {
  for (size_t i = 0; i < EnumNames<E>::names.size(); ++i)
    if (name == EnumNames<E>::names[i]) return static_cast<E>(i);
  return std::nullopt;
}

struct ModelSpec {
  std::string arch = "small_cnn";  // see `cvtrain models`
  int64_t num_classes = 10;
  int64_t image_size = 28;         // square side fed to the network
  int64_t in_channels = 0;         // 0: take it from the data
  bool small_stem = false;         // ResNet: 3x3 stride-1 stem without max-pool, for small images
  bool sync_bn = false;            // ddp: BatchNorm statistics over the global batch, not each rank's
  double drop_path = 0.0;          // ViT, ConvNeXt: stochastic depth rate of the last block (rising linearly from 0)
  bool grad_checkpointing = false; // ResNet, ViT, ConvNeXt: recompute each block in backward instead of storing it
  std::string pretrained;          // safetensors file with torchvision/timm key names to start from
  bool pretrained_strict = true;   // missing or unexpected keys in `pretrained` are an error
};

// data.workers: decode threads per rank, or auto: this rank's share of the node's cores less the
// one its training thread takes on a GPU (half its share on a CPU, where training computes on the
// same cores), at most kMaxAutoWorkers. The run plan (run_plan.h) holds the number once the job
// knows its cores; the recipe keeps saying auto.
struct WorkerCount {
  static constexpr int64_t kMaxAutoWorkers = 32;
  bool automatic = true;
  int64_t count = 0;  // the threads, when not automatic
  static WorkerCount exactly(int64_t n) { return WorkerCount{false, n}; }
};

struct DataSpec {
  DataFormat format = DataFormat::kAuto;  // auto (told from data.train, recipe/data_format.h) | idx | imagefolder | shards
                                          // (written by `cvtrain data pack`) | list (a CSV, TSV or PATH LABEL text file of
                                          // images and their classes) | synthetic (random images on the device,
                                          // data.max_samples per epoch, default ImageNet's)
  std::string train;               // idx: the images .gz/.idx file; imagefolder: a folder of class folders
  std::string val;
  std::string root;                         // list: the folder its relative paths are taken from; empty: each list's own folder
  std::vector<std::string> class_names;     // names of numbered labels (IDX, lists of number labels), label order; empty: the numbers
  DecoderKind decoder = DecoderKind::kCpu;  // cpu: the workers decode JPEGs; nvjpeg: nvJPEG decodes them on the GPU in
                                   // batches (the workers read and plan; other files stay theirs); auto: nvjpeg where it can run
  WorkerCount workers;             // decode threads: auto or a number (0: on the training thread)
  int64_t prefetch = 2;            // finished batches that may wait, beyond the one each worker makes
  int64_t max_samples = 0;         // use only N training samples (0 = all): an IDX file's first N, every
                                   // k-th of an ImageFolder or shards (so that every class stays present)
  int64_t max_val_samples = 0;     // the same for the validation data
  std::vector<double> mean{0.485, 0.456, 0.406};
  std::vector<double> std{0.229, 0.224, 0.225};
  double max_bad_fraction = 0.01;  // unreadable samples are skipped (and counted) up to this fraction
  int64_t max_image_pixels = 89478485;  // larger images are refused as unusable samples (decompression
                                        // bombs); Pillow's Image.MAX_IMAGE_PIXELS. 0 = no limit
  double eval_crop_fraction = 0.875;    // evaluation (and training without random_resized_crop): the shorter
                                        // side resized to floor(image_size / this), then the centre
                                        // image_size square kept (timm's --crop-pct)
  AugmentInterpolation eval_interpolation = AugmentInterpolation::kBilinear;  // that resize: bilinear | bicubic (timm's
                                                                              // --interpolation, DeiT's and ConvNeXt's bicubic)
  // Segmentation masks (task: segmentation; data/label_mask.h):
  int64_t ignore_index = 255;             // the id of pixels that count for no class (borders, padding)
  bool reduce_zero_label = false;         // id 0 ignored and every other id one less (ADE20K's "other", as mmseg's ADE20K config)
  EvalMode eval_mode = EvalMode::kWhole;  // segmentation evaluation: whole images, or slide: windows of eval_window every
                                          // eval_stride pixels, their logits averaged where they overlap (mmseg's test_cfg)
  std::vector<double> eval_window;        // slide: [height, width]; empty: augment.crop_size
  std::vector<double> eval_stride;        // slide: [height, width]; empty: two thirds of the window (mmseg's 512 / 341)
};

// timm's RandomErasing, applied on the device after normalisation (data/batch_erasing.h).
struct RandomErasingSpec {
  double prob = 0;                 // chance that a sample is erased at all; 0 = off (timm's --reprob)
  EraseMode mode = EraseMode::kPixel;  // const: zeros; rand: one normal colour per box; pixel: normal noise (timm's --remode)
  int64_t count = 1;               // at most this many boxes per sample, drawn in [1, count] (timm's --recount)
  double min_area = 0.02;          // of the image, per box divided by the count
  double max_area = 1.0 / 3.0;
  double min_aspect = 0.3;         // aspect ratios log-uniform in [min_aspect, 1 / min_aspect]
};

// The chance that a sample is mirrored (timm's --hflip, --vflip). The recipe takes a number in
// [0, 1] or true (0.5, torchvision's RandomHorizontalFlip) and false (0).
struct FlipChance {
  double p = 0;
  bool on() const { return p > 0; }
};

struct AugmentSpec {
  FlipChance hflip;                          // left-right
  FlipChance vflip;                          // top-bottom, after hflip (aerial, microscopy, medical images)
  int64_t random_crop_padding = 0;           // zero-pad by P pixels, then crop back at random
  std::vector<double> random_resized_crop;   // [min_scale, max_scale]; empty = off
  std::vector<double> random_resized_crop_ratio{3.0 / 4.0, 4.0 / 3.0};   // its aspect range [min, max] (timm's --ratio)
  AugmentInterpolation interpolation = AugmentInterpolation::kBilinear;  // the training resize (timm's --train-interpolation;
                                                                         // random: bilinear or bicubic per sample)
  double label_smoothing = 0.0;
  double mixup = 0.0;       // Mixup Beta(alpha, alpha); 0 = off
  double cutmix = 0.0;      // CutMix Beta(alpha, alpha); 0 = off
  double mix_prob = 1.0;    // chance that a batch is mixed at all
  double switch_prob = 0.5; // with both on: chance of CutMix rather than Mixup
  AugmentPolicy auto_augment;  // timm's policy string (rand-m9-mstd0.5-inc1 | original | 3a) or ta_wide, after crop and flip
  AugmentInterpolation aa_interpolation = AugmentInterpolation::kRandom;  // of its rotate, shear and translate
  double color_jitter = 0;  // brightness, contrast and saturation in [1 - j, 1 + j], random order (timm's --color-jitter;
                            // as timm, only without auto_augment or beside 3a); 0 = off
  RandomErasingSpec random_erasing;
  int64_t repeats = 1;      // repeated augmentation (DeiT's aug_repeats: 3): each sample k times an epoch, drawn apart, on different ranks
  // Segmentation (task: segmentation), mmseg's pipeline (data/joint_transforms.h); hflip above applies too:
  std::vector<double> crop_size;              // [height, width] of the training crops (RandomCrop); empty: model.image_size square
  std::vector<double> scale;                  // [long, short]: images first fitted within scale x ratio, aspect kept (RandomResize,
                                              // mmseg's (2048, 512)); evaluation fits them within scale itself; empty: no resize
  std::vector<double> ratio_range{0.5, 2.0};  // that ratio, uniform in [min, max]
  double cat_max_ratio = 1.0;                 // crops where one class holds more of the labelled pixels are drawn again
                                              // (up to 10 times; mmseg's 0.75); 1 = off
  bool photometric = false;                   // mmseg's PhotoMetricDistortion (brightness, contrast, saturation, hue)
};

// Whether data.format keeps images as encoded files (JPEG, PNG...), which a GPU decoder could take;
// idx holds pixels and synthetic makes them on the device.
inline bool holds_encoded_files(DataFormat format) {
  return format == DataFormat::kImageFolder || format == DataFormat::kShards || format == DataFormat::kList;
}

// Where each augment key's operation runs (and which need the CPU's pixels): recipe/augment_placement.h.

// train.ema: timm's ModelEmaV3 (train/weight_ema.h).
struct EmaSpec {
  double decay = 0;         // 0 = off; e.g. 0.9999 (ConvNeXt), 0.99996 (DeiT)
  bool warmup = false;      // decay 1 - (1 + step)^(-2/3) up to `decay` (timm's --model-ema-warmup)
  int64_t every_steps = 1;  // update after every N-th optimizer step
};

struct TrainSpec {
  int64_t epochs = 10;
  int64_t max_steps = 0;       // > 0 stops after this many optimizer steps
  int64_t stop_at_epoch = 0;   // > 0: after this epoch's evaluation, save a checkpoint and exit 0 (the schedule
                               // stays train.epochs'); started again with a later one, the run continues exactly
                               // (a sweep's early-stopping rungs)
  int64_t global_batch = 0;    // any two of global_batch, micro_batch, accumulation determine the third
  int64_t micro_batch = 0;
  bool micro_batch_auto = false; // `micro_batch: auto`: the largest that fits on the GPU, found at start
  int64_t accumulation = 0;
  double grad_clip = 0.0;      // max global gradient norm; 0 = off
  bool channels_last = true;   // CNN inputs (and weights) in NHWC layout; ignored by other models
  bool cudnn_benchmark = false; // cuDNN times its convolution algorithms per input shape (results vary run to run)
  bool cuda_graphs = false;    // capture the whole step as a CUDA graph and replay it (needs optim.implementation fused; auto picks it)
  int64_t log_every = 50;      // optimizer steps between metric lines
  int64_t max_bad_steps = 10;  // non-finite loss or gradients this many steps in a row stops the run
  int64_t seed = 0;
  EmaSpec ema;
  LossKind loss = LossKind::kCe;     // ce (cross-entropy) | bce (timm's BinaryCrossEntropy, ResNet strikes back)
  double aux_loss_weight = 0.4;      // segmentation models with an auxiliary head: its loss counts this much (mmseg's 0.4)
  int64_t eval_every = 1;            // evaluate data.val after every N-th epoch, and after the run's last
  std::vector<double> class_weights;  // segmentation: the cross-entropy's weight of each class; empty: 1 each
  double bce_target_threshold = 0;   // bce: soft targets above it become 1, the rest 0 (timm's --bce-target-thresh); 0 = off
};

struct OptimSpec {
  OptimizerKind name = OptimizerKind::kSgd;  // sgd | adamw | lamb | lars (timm's Lamb and Lars)
  double lr = 0.1;
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0.0;   // never applied to norm weights and biases
  std::vector<double> betas{0.9, 0.999};
  double eps = 1e-8;           // timm's Lamb defaults to 1e-6
  double max_grad_norm = 1.0;  // lamb: the global gradient norm is scaled down to this first (timm's default); 0 = off
  bool trust_clip = false;     // lamb, lars: trust ratio clipped at 1 (LARC for lars)
  double trust_coeff = 0.001;  // lars: the trust coefficient
  double layer_decay = 0;      // fine-tuning: layer i of n learns at lr x layer_decay^(n-1-i) (timm's --layer-decay); 0 = off
  std::map<std::string, double> lr_mult;  // a parameter whose name holds KEY learns at lr x VALUE, e.g. {decode_head: 10}
                                          // (mmseg's paramwise_cfg custom_keys lr_mult); the largest of several that match
  // sgd, adamw: foreach (torch.optim's multi-tensor path, bit for bit) or fused (ATen's _fused_sgd_ /
  // _fused_adamw_: one kernel per group, equal within float rounding); auto: foreach, torch.optim's
  // default, which the parity tests hold bit for bit (docs/benchmarks.md, "Optimizer kernels")
  OptimImplementation implementation = OptimImplementation::kAuto;
};

struct ScheduleSpec {
  ScheduleKind name = ScheduleKind::kCosine;  // cosine | step | constant | poly (mmseg's PolyLR: (1 - t/T)^power)
  double warmup_epochs = 0.0;
  double warmup_lr = -1;           // >= 0: warmup rises linearly from this at step 0, as timm's --warmup-lr;
                                   // < 0: cvtrain's ramp lr * (step + 1) / warmup_steps
  bool warmup_prefix = true;       // the decay starts after the warmup (timm's --warmup-prefix); false: as
                                   // timm's default, the cosine runs over the whole run, warmup included
  bool step_on_epochs = false;     // the lr changes once per epoch, as timm's default (without --sched-on-updates)
  double min_lr = 0.0;
  double cooldown_epochs = 0.0;    // cosine: the run's last epochs held at min_lr (timm's --cooldown-epochs, which
                                   // timm adds to --epochs; here they are part of train.epochs)
  std::vector<double> milestones;  // step: epochs at which lr is multiplied by gamma
  double gamma = 0.1;
  double power = 0.9;  // poly: the exponent (mmseg's 0.9; 1 is linear)
};

struct DistributedSpec {
  int64_t nnodes = 1;
  std::string nproc_per_node = "auto";  // auto (visible GPUs, else 1) | N
  int64_t node_rank = 0;                // this node's index when cvtrain launches several nodes
  std::string master_addr = "127.0.0.1";
  int64_t master_port = 0;              // 0: 29500, or under Slurm 20000 + job id % 20000
  std::string backend = "auto";         // auto (nccl on CUDA, gloo on CPU) | nccl | gloo
  int64_t timeout_s = 600;              // rendezvous and collective timeout
  double bucket_mb = 25;                // DDP gradient bucket size
  int64_t max_restarts = 0;             // cvtrain's launcher restarts a failed group this often (from the newest checkpoint)
  double hang_timeout_s = 900;          // cvtrain's launcher stops a group whose ranks report no step this long; 0 = off
  double stop_grace_s = 10;             // cvtrain's launcher: SIGTERM to SIGKILL when a rank failed and the others are stopped
};

// checkpoint.resume: auto (the newest complete checkpoint in OUTPUT/checkpoints; a fresh start
// when there is none) | none (always fresh) | the path of a checkpoint folder.
struct ResumeChoice {
  ResumeMode mode = ResumeMode::kAuto;
  std::string folder;  // kFolder only

  // The recipe's spelling: "auto", "none" or the folder.
  std::string spelled() const { return mode == ResumeMode::kAuto ? "auto" : mode == ResumeMode::kNone ? "none" : folder; }
};

struct CheckpointSpec {
  int64_t every_steps = 0;     // 0: no step-based checkpoints (one is always written at the end)
  double every_minutes = 0;    // 0: no time-based checkpoints
  int64_t keep = 3;            // most recent complete checkpoints kept
  ResumeChoice resume;         // auto | none | PATH
  BestMetric keep_best = BestMetric::kAuto;  // OUTPUT/best: the checkpoint of the best evaluated epoch by this (none: off;
                                             // auto: the task's, top1 or miou)
};

// Profiling and bottleneck detection: the step breakdown, MFU, the rank comparison and the
// verdicts' thresholds (docs/performance.md, "Where the time goes").
struct ObserveSpec {
  bool breakdown = true;           // per-phase step times (CUDA events read a few steps later; clocks on CPU)
  double peak_tflops = 0;          // the device's dense peak for the precision in use; 0: cvtrain's table of known GPUs
  double input_bound = 0.2;        // data-wait fraction for "input-bound" (TensorFlow's analyzer: 20 %; a quarter of it is "moderately")
  double comm_bound = 0.2;         // exposed-communication fraction for "communication-bound"
  double straggler_score = 0.85;   // a rank at less than this fraction of the fastest rank's speed is a straggler
  int64_t chronic_windows = 3;     // logging windows in a row that make a straggler chronic, not a one-off stall
  double memory_pressure = 0.9;    // peak reserved / device memory for "memory pressure"
  double memory_growth = 0.1;      // peak grown by this fraction since this start's second epoch, rising in each, is "growth"
  double storage_bound = 0.5;      // of an input-bound run: the workers' share of time in reading files that makes it storage-bound
  double launch_bound = 0.5;       // CUDA: the share of compute phases the GPU finished before the host issued the next
};

// A deep trace on demand: LibTorch's Kineto profiler over steps [first, last] on the chosen ranks,
// one gzipped Chrome trace per rank in OUTPUT/traces (docs/performance.md, "Where the time goes").
struct ProfileSpec {
  static constexpr int64_t kMaxSteps = 20;  // a trace window never grows without bound
  std::vector<double> steps;                // [first, last], 1-based optimizer steps; empty: no trace
  std::vector<double> ranks{0};             // the ranks that record
  // kineto: LibTorch's profiler writes a Chrome trace per rank; nsys: the window is bracketed by
  // cudaProfilerStart/Stop for `nsys profile --capture-range=cudaProfilerApi` (the two cannot
  // share CUPTI, so one or the other).
  ProfileTool tool = ProfileTool::kKineto;
};

// Experiment tracking on an MLflow server (docs/tracking.md): rank 0's process sends metrics.jsonl,
// the recipe, tags, the end status and artifacts from a thread of its own, never in training's way.
// Credentials come only from MLflow's variables (MLFLOW_TRACKING_TOKEN, _USERNAME, _PASSWORD).
struct MlflowSpec {
  std::string uri;                          // http(s)://HOST:PORT; "": MLFLOW_TRACKING_URI, or no tracking without it; off: none at all
  std::string experiment;                   // "": MLFLOW_EXPERIMENT_NAME, else "Default" (MLflow's own default)
  std::string run_name;                     // "": the output folder's name
  std::map<std::string, std::string> tags;  // added to the run's own, e.g. {team: vision, dataset: in1k}
  bool log_weights = false;                 // also upload the final model.pt (large: off by default)
};

struct TrackSpec {
  MlflowSpec mlflow;
};

struct Recipe {
  TaskKind task = TaskKind::kClassification;  // classification | segmentation: what a sample's target is, and the loss,
                                              // metric and tools that go with it (train/task.h)
  ModelSpec model;
  DataSpec data;
  AugmentSpec augment;
  TrainSpec train;
  OptimSpec optim;
  ScheduleSpec schedule;
  Precision precision = Precision::kFp32;         // fp32 | tf32 | bf16 | fp16
  StrategyKind strategy = StrategyKind::kAuto;    // auto (single for one rank, ddp for more) | single | ddp | zero1 | zero2 | fsdp
  DeviceKind device = DeviceKind::kAuto;          // auto | cpu | cuda
  DistributedSpec distributed;
  CheckpointSpec checkpoint;
  ObserveSpec observe;
  ProfileSpec profile;
  TrackSpec track;
  bool preflight = false;  // measure the ranks, links and input pipeline before training (tools/preflight.h)
  std::string output = "runs/default";

  // Where each key the files or overrides set came from ("recipes/a.yaml:12", "override 'x=1'"),
  // so that errors found after loading (against the data) still name the line.
  std::map<std::string, std::string> origins;
  // "ORIGIN: KEY" for error messages; a key no file or override set reads "RECIPE (not set): KEY",
  // naming the file where setting it would go.
  std::string where(const std::string& key) const {
    const auto it = origins.find(key);
    return (it == origins.end() ? std::string("(default)") : it->second) + ": " + key;
  }
};

}  // namespace cvtrain
