// The recipe rules that involve more than one key (see recipe_checks.h), one function a section.
#include "cvtrain/recipe/recipe_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "cvtrain/core/text.h"
#include "cvtrain/core/weights_format.h"
#include "cvtrain/recipe/augment_placement.h"
#include "cvtrain/recipe/batch_plan.h"
#include "cvtrain/recipe/data_format.h"
#include "cvtrain/recipe/strategy_traits.h"
#include "cvtrain/recipe/task_checks.h"

namespace cvtrain {
namespace {

namespace fs = std::filesystem;

struct CrossChecks {
  const KeyFailure& fail;
};

void resolve_batch(TrainSpec& t, int64_t world, const CrossChecks& check) {
  const int64_t g = t.global_batch, m = t.micro_batch, a = t.accumulation;
  if (g && m && a) {
    if (g != m * a * world)
      check.fail("train.global_batch", fmt::format("{} does not equal micro_batch {} x accumulation {} x world size {} = {}",
                                                   g, m, a, world, m * a * world));
  } else if (m && a) {
    t.global_batch = m * a * world;
  } else if (g && (m || a)) {
    const int64_t known = (m ? m : a) * world;
    if (g % known != 0) {
      check.fail("train.global_batch", fmt::format("{} is not divisible by {} {} x world size {} = {}", g,
                                                   m ? "micro_batch" : "accumulation", m ? m : a, world, known));
    } else if (m) {
      t.accumulation = g / known;
    } else {
      t.micro_batch = g / known;
    }
  } else if (g) {
    if (g % world != 0)
      check.fail("train.global_batch", fmt::format("{} is not divisible by the world size {}", g, world));
    t.micro_batch = g / world;
    t.accumulation = 1;
  } else if (m) {
    t.accumulation = 1;
    t.global_batch = m * world;
  } else {
    check.fail("train.global_batch", "set train.global_batch and/or train.micro_batch (accumulation is derived)");
  }
}

bool whole(double v) { return v >= 0 && v == static_cast<double>(static_cast<int64_t>(v)); }

void check_profile(const ProfileSpec& p, const CrossChecks& check) {
  const auto& s = p.steps;
  if (!s.empty() && (s.size() != 2 || !whole(s[0]) || !whole(s[1]) || s[0] < 1 || s[0] > s[1]))
    check.fail("profile.steps", "expected [first, last], whole optimizer steps with 1 <= first <= last, e.g. [20, 25]");
  else if (!s.empty() && s[1] - s[0] + 1 > ProfileSpec::kMaxSteps)
    check.fail("profile.steps", fmt::format("a trace covers at most {} steps (it grows with every step), got {}", ProfileSpec::kMaxSteps,
                                            static_cast<int64_t>(s[1] - s[0] + 1)));
  for (double r : p.ranks)
    if (!whole(r)) check.fail("profile.ranks", fmt::format("expected rank numbers (whole, from 0), got {}", r));
}

// A path that starts with ~/ means the home folder, as a shell would take it. The shell does not
// expand it in a recipe, nor in an override such as data.train=~/x (not an assignment to it), and
// left as it is, ~ would become a folder of that name in the working directory, where a later
// `rm -rf ~` would remove the home folder instead.
std::string with_home(const std::string& path) {
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0' || path.rfind("~/", 0) != 0) return path;  // a bare ~ is YAML's null
  return std::string(home) + path.substr(1);
}

void expand_home_folders(Recipe& r) {
  for (std::string* path : {&r.data.train, &r.data.val, &r.data.root, &r.model.pretrained, &r.output, &r.checkpoint.resume.folder})
    *path = with_home(*path);
}

// A missing path says where a relative one was looked for (the working directory, not the
// recipe's folder) and how to point the key elsewhere without editing the recipe.
std::string missing_path(const std::string& key, const std::string& path, const char* what) {
  std::error_code ec;
  const std::string relative = fs::path(path).is_relative() ? fmt::format(" (relative to the working directory {})", fs::current_path(ec).string()) : "";
  std::string word = path;
  std::transform(word.begin(), word.end(), word.begin(), [](unsigned char c) { return std::tolower(c); });
  if (word == "none" || word == "false" || word == "no" || word == "off")  // Python's None, YAML's booleans: meant "no file"
    return fmt::format("'{}' {}{}; to leave {} out, give it no value ({}= or null)", path, what, relative, key, key);
  if (key == "model.pretrained" && (word == "true" || word == "yes" || word == "on"))  // timm's pretrained=True
    return fmt::format(
        "'{}' {}: cvtrain downloads no weights (timm's pretrained=True does); save them once as a safetensors "
        "file (recipes/finetune_resnet50.yaml says how) and give its path",
        path, what);
  return fmt::format("'{}' {}{}; point it at yours with {}=PATH after the recipe", path, what, relative, key);
}

// data.format: auto becomes what data.train holds (data.val's, for a recipe that only evaluates);
// it stays auto only where neither the path nor its name tells (`check --no-paths`).
void resolve_data_format(DataSpec& data, TaskKind task) {
  if (data.format != DataFormat::kAuto) return;
  const std::string& path = data.train.empty() ? data.val : data.train;
  if (const auto told = task == TaskKind::kSegmentation ? pairs_format_of_path(path) : format_of_path(path)) data.format = *told;
}

void check_paths(const Recipe& r, const CrossChecks& check) {
  std::error_code root_ec;
  if (!r.data.root.empty() && r.data.format != DataFormat::kList)
    check.fail("data.root", fmt::format("is for data.format list (the folder a list's relative paths start from); data.format is {}",
                                        name_of(r.data.format)));
  else if (!r.data.root.empty() && !fs::is_directory(r.data.root, root_ec))
    check.fail("data.root", missing_path("data.root", r.data.root, "is not a folder"));
  const bool folders = r.data.format == DataFormat::kImageFolder || r.data.format == DataFormat::kShards ||
                       r.data.format == DataFormat::kAde20k || r.data.format == DataFormat::kCityscapes;
  for (const auto& [key, path] : {std::pair{"data.train", r.data.train}, std::pair{"data.val", r.data.val}}) {
    if (path.empty()) continue;
    std::error_code ec;
    const bool exists = fs::exists(path, ec);
    if (!exists)
      check.fail(key, missing_path(key, path, "does not exist"));
    else if (r.data.format == DataFormat::kAuto) {  // here, but of no format: the path auto was told from says why
      if (path == (r.data.train.empty() ? r.data.val : r.data.train))
        check.fail(key, r.task == TaskKind::kSegmentation ? no_pairs_message(path) : no_dataset_message(path));
    } else if (folders != fs::is_directory(path, ec))
      check.fail(key, fmt::format("'{}' must be {} for data.format {}", path, folders ? "a folder" : "a file", name_of(r.data.format)));
  }
}


// device: cpu, or auto on a machine without a GPU that is the one the job runs on (not a login
// node checking for another, nor a run's saved recipe read elsewhere).
bool runs_without_gpu(const Recipe& r, const LoadOptions& options) {
  return r.device == DeviceKind::kCpu ||
         (r.device == DeviceKind::kAuto && options.check_machine && options.visible_gpus == 0 && !options.saved_by_run);
}

// micro_batch: auto searches GPU memory; it needs a GPU and a global batch to divide, and fsdp's
// memory depends on its gathering, which a plain forward and backward cannot probe.
void check_auto_micro_batch(const Recipe& r, StrategyKind strategy, const LoadOptions& options, const CrossChecks& check) {
  if (!r.train.micro_batch_auto) return;
  if (runs_without_gpu(r, options))
    check.fail("train.micro_batch", "auto searches GPU memory for the largest micro-batch that fits, and this run has no GPU; "
                                    "set a number (the global batch is then reached by accumulation)");
  if (r.train.global_batch <= 0) check.fail("train.micro_batch", "auto needs train.global_batch, which it divides");
  if (r.train.accumulation > 0) check.fail("train.accumulation", "is derived when train.micro_batch is auto; leave it out");
  if (const char* gathers = strategy_traits(strategy).gathers_in_step)
    check.fail("train.micro_batch", fmt::format("auto is not available with strategy {}: {}, which a plain forward and backward "
                                                "cannot probe; set a number",
                                                name_of(strategy), gathers));
}

// A captured step cannot let the host decide whether to skip it: only the fused kernels take that
// decision as a device flag, so auto resolves to fused (run_plan.h) and anything else is refused here.
void check_cuda_graphs(const Recipe& r, bool trust_ratio, const CrossChecks& check) {
  if (!r.train.cuda_graphs) return;
  if (trust_ratio)
    check.fail("train.cuda_graphs", fmt::format("needs a fused optimizer (sgd or adamw); {} updates through host decisions", name_of(r.optim.name)));
  else if (r.optim.implementation == OptimImplementation::kForeach)
    check.fail(
        "optim.implementation",
        "foreach decides on the host whether to skip a step, which a captured step cannot; with train.cuda_graphs use fused (or auto)");
}

// data.decoder nvjpeg decodes JPEG files on a GPU and renders only crop and flip there: what it
// cannot serve is a recipe error here, where `auto` would quietly choose the CPU.
void check_decoder(const Recipe& r, const LoadOptions& options, const CrossChecks& check) {
  if (r.data.decoder != DecoderKind::kNvjpeg) return;
  if (!holds_encoded_files(r.data.format) && r.data.format != DataFormat::kAuto)
    check.fail("data.decoder", fmt::format("nvjpeg decodes JPEG files, and data.format {} holds none; use cpu", name_of(r.data.format)));
  if (runs_without_gpu(r, options))
    check.fail("data.decoder", "nvjpeg decodes on a GPU, and this run has none; use cpu (or auto, which chooses by the machine)");
  if (const char* on_cpu_only = augment_needing_cpu_pixels(r.augment))
    check.fail(on_cpu_only, "runs on the CPU's decoded pixels, and data.decoder nvjpeg decodes on the GPU (rendering only crop and flip "
                            "there); use data.decoder cpu (or auto, which chooses it here)");
}

// Pixels are normalised on torchvision's 0-1 scale; mmcv's configs give mean and std on 0-255
// ([123.675, 116.28, 103.53]), which here would turn every image into nearly one constant. No
// channel's mean or standard deviation on 0-1 exceeds 1.
void check_pixel_scale(const char* key, const std::vector<double>& values, const CrossChecks& check) {
  if (std::none_of(values.begin(), values.end(), [](double v) { return v > 1; })) return;
  std::vector<std::string> given, scaled;
  for (double v : values) {
    given.push_back(fmt::format("{}", v));
    scaled.push_back(fmt::format("{:.4g}", v / 255));
  }
  check.fail(key, fmt::format("[{}] is on the 0-255 scale (as mmcv's configs give it); cvtrain's pixels are 0-1, as torchvision's: "
                              "divide by 255, [{}]",
                              join(given, ", "), join(scaled, ", ")));
}

void check_data(const Recipe& r, const LoadOptions& options, const CrossChecks& check) {
  const bool synthetic = r.data.format == DataFormat::kSynthetic;
  if (r.data.train.empty() && !synthetic) check.fail("data.train", "no training data given");
  if (synthetic && !r.data.val.empty())
    check.fail("data.val", "synthetic data has no validation set; leave data.val empty (data.val= after the recipe)");
  std::error_code missing_file;
  if (options.check_paths && !r.model.pretrained.empty()) {
    if (!fs::is_regular_file(r.model.pretrained, missing_file))
      check.fail("model.pretrained", missing_path("model.pretrained", r.model.pretrained, "is not a file"));
    else if (const auto problem = safetensors_file_problem(r.model.pretrained))
      check.fail("model.pretrained", *problem);
  }
  if (options.check_paths && !synthetic) check_paths(r, check);
  if (r.data.mean.empty()) check.fail("data.mean", "needs one value per image channel, e.g. [0.485, 0.456, 0.406]");
  if (r.data.mean.size() != r.data.std.size())
    check.fail("data.std", fmt::format("has {} values but data.mean has {}", r.data.std.size(), r.data.mean.size()));
  for (double s : r.data.std)
    if (s <= 0) check.fail("data.std", fmt::format("every value must be greater than 0, got {}", s));
  check_pixel_scale("data.mean", r.data.mean, check);
  check_pixel_scale("data.std", r.data.std, check);
}

// Where the run writes and what it resumes from.
void check_run_folders(const Recipe& r, const LoadOptions& options, const CrossChecks& check) {
  if (r.output.empty()) check.fail("output", "names the run folder (metrics, checkpoints, weights) and cannot be empty");
  const ResumeChoice& resume = r.checkpoint.resume;
  std::error_code missing;
  if (options.check_paths && resume.mode == ResumeMode::kFolder && !fs::is_directory(resume.folder, missing))
    check.fail("checkpoint.resume", fmt::format("'{}' is not a folder; expected auto, none, a checkpoint folder (RUN/checkpoints/step-N) "
                                                "or a run folder (its newest complete checkpoint)", resume.folder));
  const BestMetric best = r.checkpoint.keep_best;
  if ((best == BestMetric::kTop1Ema || best == BestMetric::kMiouEma) && r.train.ema.decay <= 0)
    check.fail("checkpoint.keep_best", fmt::format("{} judges the weight average, and train.ema is off; use {} or set train.ema.decay",
                                                   name_of(best), best == BestMetric::kTop1Ema ? "top1" : "miou"));
}

void check_augment(const Recipe& r, const CrossChecks& check) {
  const auto& crop = r.augment.random_resized_crop;
  if (!crop.empty() && (crop.size() != 2 || crop[0] <= 0 || crop[0] > crop[1] || crop[1] > 1))
    check.fail("augment.random_resized_crop", "expected [min_scale, max_scale] with 0 < min_scale <= max_scale <= 1");
  const auto& ratio = r.augment.random_resized_crop_ratio;
  if (ratio.size() != 2 || ratio[0] <= 0 || ratio[0] > ratio[1])
    check.fail("augment.random_resized_crop_ratio",
               "expected [min, max] aspect ratios (width / height) with 0 < min <= max, "
               "e.g. torchvision's [0.75, 1.3333]");
  if (r.augment.repeats > r.train.global_batch && r.train.global_batch > 0)
    check.fail("augment.repeats", fmt::format("{} copies do not fit in a global batch of {}", r.augment.repeats, r.train.global_batch));
  const RandomErasingSpec& erasing = r.augment.random_erasing;
  if (erasing.min_area > erasing.max_area)
    check.fail("augment.random_erasing.min_area", fmt::format("{} is above max_area {}", erasing.min_area, erasing.max_area));
}

// The optimizer against the strategy: LAMB and LARS need whole parameters, and only sgd and adamw
// have fused kernels (which train.cuda_graphs needs).
void check_optimizer(const Recipe& r, StrategyKind strategy, const CrossChecks& check) {
  const bool flat_shards = strategy_traits(strategy).updates_flat_shards;
  const bool trust_ratio = uses_trust_ratio(r.optim.name);
  if (trust_ratio && flat_shards)
    check.fail("optim.name", fmt::format("{}'s trust ratio needs each parameter's whole norm, and {} updates flat shards that "
                                         "cut across parameters; use single or ddp with it",
                                         name_of(r.optim.name), name_of(strategy)));
  if (r.optim.implementation == OptimImplementation::kFused && trust_ratio)
    check.fail("optim.implementation", fmt::format("ATen has fused kernels for sgd and adamw, not {}; use foreach or auto", name_of(r.optim.name)));
  check_cuda_graphs(r, trust_ratio, check);
  if (r.optim.layer_decay > 0 && flat_shards)
    check.fail("optim.layer_decay",
               fmt::format("{} updates flat shards that cut across layers; use single or ddp with it", name_of(strategy)));
  if (!r.optim.lr_mult.empty() && flat_shards)
    check.fail("optim.lr_mult",
               fmt::format("{} updates flat shards that cut across modules; use single or ddp with it", name_of(strategy)));
  for (const auto& [key, mult] : r.optim.lr_mult)
    if (key.empty() || mult <= 0)
      check.fail("optim.lr_mult", fmt::format("expected names and multipliers above 0, e.g. {{decode_head: 10}}; got '{}': {}", key, mult));
  const auto& betas = r.optim.betas;
  if (betas.size() != 2 || betas[0] < 0 || betas[0] >= 1 || betas[1] < 0 || betas[1] >= 1)
    check.fail("optim.betas", "expected [beta1, beta2], each in [0, 1)");
  if (r.optim.nesterov && r.optim.momentum == 0) check.fail("optim.nesterov", "needs optim.momentum > 0");
}

void check_schedule(const Recipe& r, const CrossChecks& check) {
  if (r.schedule.warmup_lr > r.optim.lr)
    check.fail("schedule.warmup_lr", fmt::format("{} is above optim.lr {} (warmup rises to optim.lr)", r.schedule.warmup_lr, r.optim.lr));
  if (r.schedule.min_lr > r.optim.lr)
    check.fail("schedule.min_lr", fmt::format("{} is above optim.lr {}", r.schedule.min_lr, r.optim.lr));
  const auto& m = r.schedule.milestones;
  if (!std::is_sorted(m.begin(), m.end()) || (!m.empty() && m.front() <= 0))
    check.fail("schedule.milestones", "must be positive epochs in increasing order");
  if (r.schedule.name == ScheduleKind::kStep && m.empty()) check.fail("schedule.milestones", "schedule 'step' needs milestones");
  if (r.schedule.cooldown_epochs > 0 && r.schedule.name != ScheduleKind::kCosine)
    check.fail(
        "schedule.cooldown_epochs",
        fmt::format("holds the cosine's end (min_lr) for the run's last epochs; schedule '{}' has no such end", name_of(r.schedule.name)));
}

// strategy: auto stays in the recipe (the run plan resolves it); single needs a job of one rank.
void check_strategy(const Recipe& r, int world, const CrossChecks& check) {
  if (r.strategy == StrategyKind::kSingle && world > 1)
    check.fail("strategy", fmt::format("'single' runs one process but the job has {} ranks; use ddp (or auto, which picks it)", world));
  if (r.distributed.node_rank >= r.distributed.nnodes)
    check.fail("distributed.node_rank", fmt::format("{} is outside [0, nnodes {})", r.distributed.node_rank, r.distributed.nnodes));
}

}  // namespace

bool uses_trust_ratio(OptimizerKind name) { return name == OptimizerKind::kLamb || name == OptimizerKind::kLars; }

std::vector<std::string> recipe_warnings(const Recipe& r) {
  std::vector<std::string> warnings;
  const auto epochs = static_cast<double>(r.train.epochs);
  if (r.schedule.warmup_epochs >= epochs)
    warnings.push_back(fmt::format("{}: {:g} is not shorter than train.epochs {}: the learning rate never reaches optim.lr {:g}",
                                   r.where("schedule.warmup_epochs"), r.schedule.warmup_epochs, r.train.epochs, r.optim.lr));
  const double warmup_before_decay = r.schedule.warmup_prefix ? r.schedule.warmup_epochs : 0.0;
  if (r.schedule.cooldown_epochs > 0 && warmup_before_decay + r.schedule.cooldown_epochs >= epochs)
    warnings.push_back(fmt::format("{}: {:g}{} leave no epoch of train.epochs {} for the cosine to decay over",
                                   r.where("schedule.cooldown_epochs"), r.schedule.cooldown_epochs,
                                   warmup_before_decay > 0 ? fmt::format(" and the warmup's {:g}", warmup_before_decay) : "",
                                   r.train.epochs));
  if (r.schedule.name == ScheduleKind::kStep)
    for (double m : r.schedule.milestones)
      if (m >= epochs)
        warnings.push_back(fmt::format("{}: epoch {:g} is not within train.epochs {} (epochs 0 to {}): it never applies",
                                       r.where("schedule.milestones"), m, r.train.epochs, r.train.epochs - 1));
  // A flip chance of 1 mirrors every sample: the same data, mirrored, with no augmentation left. More
  // likely "on" written as 1 than meant.
  for (const auto& [key, flip] : {std::pair{"augment.hflip", r.augment.hflip}, std::pair{"augment.vflip", r.augment.vflip}})
    if (flip.p == 1)
      warnings.push_back(
          fmt::format("{}: 1 is a chance (timm's --hflip): every sample is mirrored, so none varies; for a random "
                      "flip write 0.5 (or true)",
                      r.where(key)));
  const AugmentSpec defaults;
  if (r.augment.random_resized_crop.empty() && r.augment.random_resized_crop_ratio != defaults.random_resized_crop_ratio)
    warnings.push_back(fmt::format("{}: the aspect range of augment.random_resized_crop, which is off: it changes nothing",
                                   r.where("augment.random_resized_crop_ratio")));
  // The default side is the quickstart's Fashion-MNIST's: photographs left at it train as thumbnails.
  if (holds_encoded_files(r.data.format) && r.where("model.image_size").find("(not set)") != std::string::npos)
    warnings.push_back(
        fmt::format("{}: not set, so images are cut to {} px (the default, Fashion-MNIST's size); photographs "
                    "usually train at 224 (ImageNet's) or more: set model.image_size",
                    r.where("model.image_size"), r.model.image_size));
  // Scoring the training images (a quick test's shortcut, left in) reads as accuracy on held-out data.
  std::error_code ec;
  if (!r.data.val.empty() && (r.data.val == r.data.train || std::filesystem::equivalent(r.data.val, r.data.train, ec)))
    warnings.push_back(
        fmt::format("{}: {} is data.train too: the validation figures are scored on the training images, not on "
                    "held-out ones",
                    r.where("data.val"), r.data.val));
  return warnings;
}

std::vector<std::string> checks_left_for_the_job(const Recipe& r) {
  std::vector<std::string> left;
  if (r.device == DeviceKind::kCuda) left.push_back("device cuda: the node must have a visible GPU");
  if (r.device == DeviceKind::kAuto) left.push_back("device auto: the node's GPUs if it has any, else its CPU");
  const bool may_use_gpu = r.device != DeviceKind::kCpu;
  if (r.distributed.nproc_per_node == "auto")
    left.push_back(
        fmt::format("distributed.nproc_per_node auto: one rank per GPU of each node; the batch above counts {} rank(s) per node as if "
                    "the node had none (distributed.nproc_per_node=N checks the batch for N)",
                    BatchPlan::of(r.train).world / std::max<int64_t>(1, r.distributed.nnodes)));
  else if (may_use_gpu)
    left.push_back(fmt::format("distributed.nproc_per_node {}: each node must see that many GPUs", r.distributed.nproc_per_node));
  if (r.data.decoder == DecoderKind::kNvjpeg) left.push_back("data.decoder nvjpeg: a GPU and nvJPEG's library (libnvjpeg) on the node");
  if (r.data.decoder == DecoderKind::kAuto) left.push_back("data.decoder auto: nvJPEG where the node has a GPU and the recipe allows it");
  if (r.train.micro_batch_auto) left.push_back("train.micro_batch auto: searched in the GPU's memory when the job starts");
  if (r.train.cuda_graphs) left.push_back("train.cuda_graphs: captured on a GPU (on a CPU the step runs eagerly, with a warning)");
  if (may_use_gpu && r.distributed.backend != "gloo")
    left.push_back(fmt::format("distributed.backend {}: NCCL between GPU ranks{}", r.distributed.backend,
                               r.distributed.backend == "auto" ? " (Gloo on a CPU)" : ""));
  if (r.data.workers.automatic) left.push_back("data.workers auto: the cores each rank is given on its node");
  return left;
}

void cross_check(Recipe& r, const LoadOptions& options, const KeyFailure& fail) {
  const CrossChecks check{fail};
  expand_home_folders(r);
  // A resolved recipe holds global = micro x accumulation x world: the world it ran on follows.
  const int world = options.saved_by_run ? BatchPlan::of(r.train).world
                    : options.world_size > 0 ? options.world_size : world_size_of(r.distributed, options.visible_gpus);
  const StrategyKind strategy = resolve_strategy(r.strategy, world);
  check_auto_micro_batch(r, strategy, options, check);
  resolve_batch(r.train, world, check);  // with micro_batch: auto, provisionally global / world
  resolve_data_format(r.data, r.task);
  check_data(r, options, check);
  check_run_folders(r, options, check);
  check_profile(r.profile, check);
  check_augment(r, check);
  check_optimizer(r, strategy, check);
  check_decoder(r, options, check);
  check_schedule(r, check);
  check_task(r, fail);
  if (options.check_model)
    for (const KeyProblem& problem : options.check_model(r, world)) check.fail(problem.key, problem.message);
  check_strategy(r, world, check);
}

}  // namespace cvtrain
