// Advice for unknown recipe keys: names from other training tools and keys put in the wrong section (key_hints.h).
#include "cvtrain/recipe/key_hints.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "cvtrain/core/text.h"

namespace cvtrain {
namespace {

struct ForeignName {
  const char* name;  // a whole key ("model.name") or its last part, lower case, '_' for '-'
  const char* hint;
};

constexpr const char* kBatchHint =
    "train.micro_batch, the batch of one rank's forward pass (timm's and torchvision's --batch-size, per GPU), "
    "or train.global_batch, the batch of one optimizer step over all ranks and accumulation steps";

// What other tools call cvtrain's keys. A name that is also one of cvtrain's own last parts
// (lr, seed, epochs...) needs no entry: the same-name rule below finds it in its section.
constexpr std::array kForeignNames{
    ForeignName{"batch_size", kBatchHint},
    ForeignName{"batch", kBatchHint},
    ForeignName{"bs", kBatchHint},
    ForeignName{"per_device_train_batch_size", kBatchHint},
    ForeignName{"train_batch_size", kBatchHint},
    ForeignName{"learning_rate", "optim.lr"},
    ForeignName{"base_lr", "optim.lr"},
    ForeignName{"lr_base",
                "optim.lr, the rate itself: timm's lr_base x (global batch / lr_base_size, 256 by default), the ratio's "
                "square root for adaptive optimizers (adamw, lamb)"},
    ForeignName{"lr_base_size", "optim.lr, the rate itself, scaled to train.global_batch as timm scales lr_base"},
    ForeignName{"lr_base_scale", "optim.lr, the rate itself, scaled to train.global_batch as timm scales lr_base"},
    ForeignName{"wd", "optim.weight_decay"},
    ForeignName{"opt", "optim.name"},
    ForeignName{"optimizer", "optim.name"},
    ForeignName{"model.name", "model.arch"},
    ForeignName{"model_name", "model.arch"},
    ForeignName{"architecture", "model.arch"},
    ForeignName{"sched", "schedule.name"},
    ForeignName{"scheduler", "schedule.name"},
    ForeignName{"lr_scheduler", "schedule.name"},
    ForeignName{"decay_rate", "schedule.gamma"},
    ForeignName{"decay_milestones", "schedule.milestones"},
    ForeignName{"max_epochs", "train.epochs"},
    ForeignName{"num_train_epochs", "train.epochs"},
    ForeignName{"num_epochs", "train.epochs"},
    ForeignName{"num_workers", "data.workers"},
    ForeignName{"dataloader_num_workers", "data.workers"},
    ForeignName{"img_size", "model.image_size"},
    ForeignName{"input_size", "model.image_size"},
    ForeignName{"resolution", "model.image_size"},
    ForeignName{"crop_size", "model.image_size"},
    ForeignName{"train_crop_size", "model.image_size"},
    ForeignName{"classes", "model.num_classes"},
    ForeignName{"n_classes", "model.num_classes"},
    ForeignName{"smoothing", "augment.label_smoothing"},
    ForeignName{"mixup_alpha", "augment.mixup"},
    ForeignName{"cutmix_alpha", "augment.cutmix"},
    ForeignName{"mixup_prob", "augment.mix_prob"},
    ForeignName{"mixup_switch_prob", "augment.switch_prob"},
    ForeignName{"aa", "augment.auto_augment"},
    ForeignName{"autoaugment", "augment.auto_augment"},
    ForeignName{"reprob", "augment.random_erasing.prob"},
    ForeignName{"remode", "augment.random_erasing.mode"},
    ForeignName{"recount", "augment.random_erasing.count"},
    ForeignName{"amp", "precision (fp32, tf32, bf16 or fp16)"},
    ForeignName{"mixed_precision", "precision (fp32, tf32, bf16 or fp16)"},
    ForeignName{"dtype", "precision (fp32, tf32, bf16 or fp16)"},
    ForeignName{"fp16", "precision: fp16"},
    ForeignName{"bf16", "precision: bf16"},
    ForeignName{"accumulate_grad_batches", "train.accumulation"},
    ForeignName{"gradient_accumulation_steps", "train.accumulation"},
    ForeignName{"grad_accum", "train.accumulation"},
    ForeignName{"accum_iter", "train.accumulation"},
    ForeignName{"clip_grad", "train.grad_clip"},
    ForeignName{"clip_grad_norm", "train.grad_clip"},
    ForeignName{"gradient_clip_val", "train.grad_clip"},
    ForeignName{"train.max_grad_norm", "train.grad_clip (optim.max_grad_norm is LAMB's own scaling)"},
    ForeignName{"drop_path_rate", "model.drop_path"},
    ForeignName{"model_ema", "train.ema.decay (0 = off)"},
    ForeignName{"model_ema_decay", "train.ema.decay"},
    ForeignName{"ema_decay", "train.ema.decay"},
    ForeignName{"output_dir", "output"},
    ForeignName{"out_dir", "output"},
    ForeignName{"save_dir", "output"},
    ForeignName{"default_root_dir", "output"},
    ForeignName{"checkpoint_dir", "output (checkpoints go to OUTPUT/checkpoints)"},
    ForeignName{"resume_from_checkpoint", "checkpoint.resume"},
    ForeignName{"ckpt_path", "checkpoint.resume"},
    ForeignName{"checkpoint_hist", "checkpoint.keep"},
    ForeignName{"save_steps", "checkpoint.every_steps"},
    ForeignName{"gpus", "distributed.nproc_per_node"},
    ForeignName{"devices", "distributed.nproc_per_node"},
    ForeignName{"num_gpus", "distributed.nproc_per_node"},
    ForeignName{"world_size", "distributed.nproc_per_node (and distributed.nnodes)"},
    ForeignName{"num_nodes", "distributed.nnodes"},
    ForeignName{"log_interval", "train.log_every"},
    ForeignName{"log_every_n_steps", "train.log_every"},
    ForeignName{"logging_steps", "train.log_every"},
    ForeignName{"gradient_checkpointing", "model.grad_checkpointing"},
    ForeignName{"activation_checkpointing", "model.grad_checkpointing"},
    ForeignName{"data_dir", "data.train (and data.val)"},
    ForeignName{"data_path", "data.train (and data.val)"},
    ForeignName{"data.path", "data.train (and data.val)"},
    ForeignName{"data.dir", "data.train (and data.val)"},
    ForeignName{"data.type", "data.format (auto tells it from data.train)"},
    ForeignName{"dataset_type", "data.format (auto tells it from data.train)"},
    ForeignName{"dataset", "data.train (and data.val), with data.format"},
    ForeignName{"train_dir", "data.train"},
    ForeignName{"train_data", "data.train"},
    ForeignName{"val_dir", "data.val"},
    ForeignName{"valid", "data.val"},
    ForeignName{"validation", "data.val"},
    ForeignName{"benchmark", "train.cudnn_benchmark"},
    ForeignName{"warmup", "schedule.warmup_epochs"},
    ForeignName{"warmup_steps", "schedule.warmup_epochs (in epochs, fractions allowed)"},
    ForeignName{"warmup_iters", "schedule.warmup_epochs (in epochs, fractions allowed)"},
    ForeignName{"eta_min", "schedule.min_lr"},
    ForeignName{"lr_min", "schedule.min_lr"},
    ForeignName{"decay_epochs", "schedule.milestones"},
    ForeignName{"step_size", "schedule.milestones"},
    ForeignName{"cooldown",
                "schedule.cooldown_epochs (part of train.epochs: timm's --epochs 300 --cooldown-epochs 10 is train.epochs 310)"},
    ForeignName{"sched_on_updates", "schedule.step_on_epochs (false is timm's --sched-on-updates)"},
    ForeignName{"beta1", "optim.betas ([beta1, beta2])"},
    ForeignName{"beta2", "optim.betas ([beta1, beta2])"},
    ForeignName{"opt_betas", "optim.betas"},
    ForeignName{"epsilon", "optim.eps"},
    ForeignName{"opt_eps", "optim.eps"},
    ForeignName{"crop_pct", "data.eval_crop_fraction"},
    ForeignName{"initial_checkpoint", "model.pretrained (a safetensors file)"},
    ForeignName{"amp_dtype", "precision (bf16 or fp16)"},
    ForeignName{"grad_accum_steps", "train.accumulation"},
    ForeignName{"bce_loss", "train.loss (bce)"},
    ForeignName{"bce_target_thresh", "train.bce_target_threshold"},
    ForeignName{"scale", "augment.random_resized_crop ([min, max] area fraction)"},
    ForeignName{"ratio", "augment.random_resized_crop_ratio ([min, max] aspect)"},
    ForeignName{"train_interpolation", "augment.interpolation"},
    ForeignName{"interpolation", "data.eval_interpolation (augment.interpolation for training)"},
};

struct ForeignValue {
  const char* value;   // lower case
  const char* choice;  // what cvtrain calls it
  const char* note;    // "" or what differs
};

// Other tools' spellings of choices (Lightning's precision and strategy flags, timm's and torch's
// optimizer and scheduler names, dataset names); only those whose choice is offered are told.
constexpr std::array kForeignValues{
    ForeignValue{"16-mixed", "fp16", ""},
    ForeignValue{"16", "fp16", ""},
    ForeignValue{"16-true", "fp16", "mixed precision with fp32 weights, as Lightning's 16-mixed"},
    ForeignValue{"fp16-mixed", "fp16", ""},
    ForeignValue{"float16", "fp16", ""},
    ForeignValue{"half", "fp16", ""},
    ForeignValue{"amp", "fp16", "or bf16 where the GPU has it"},
    ForeignValue{"bf16-mixed", "bf16", ""},
    ForeignValue{"bf16-true", "bf16", "mixed precision with fp32 weights, as Lightning's bf16-mixed"},
    ForeignValue{"bfloat16", "bf16", ""},
    ForeignValue{"32", "fp32", ""},
    ForeignValue{"32-true", "fp32", ""},
    ForeignValue{"float32", "fp32", ""},
    ForeignValue{"float", "fp32", ""},
    ForeignValue{"high", "tf32", "torch.set_float32_matmul_precision('high')"},
    ForeignValue{"ddp_spawn", "ddp", ""},
    ForeignValue{"ddp_find_unused_parameters_true", "ddp", ""},
    ForeignValue{"ddp_find_unused_parameters_false", "ddp", ""},
    ForeignValue{"dp", "ddp", "one process per GPU"},
    ForeignValue{"deepspeed_stage_1", "zero1", ""},
    ForeignValue{"deepspeed_stage_2", "zero2", ""},
    ForeignValue{"deepspeed_stage_3", "fsdp", "parameters sharded too"},
    ForeignValue{"single_device", "single", ""},
    ForeignValue{"gpu", "cuda", ""},
    ForeignValue{"adam", "adamw", "torch.optim.AdamW: decoupled weight decay"},
    ForeignValue{"momentum", "sgd", "with optim.momentum"},
    ForeignValue{"nesterov", "sgd", "with optim.nesterov: true"},
    ForeignValue{"sgdm", "sgd", "with optim.momentum"},
    ForeignValue{"cos", "cosine", ""},
    ForeignValue{"cosineannealinglr", "cosine", ""},
    ForeignValue{"cosine_annealing", "cosine", ""},
    ForeignValue{"multistep", "step", "with schedule.milestones"},
    ForeignValue{"multisteplr", "step", "with schedule.milestones"},
    ForeignValue{"steplr", "step", "with schedule.milestones"},
    ForeignValue{"constantlr", "constant", ""},
    ForeignValue{"fixed", "constant", ""},
    ForeignValue{"image_folder", "imagefolder", ""},
    ForeignValue{"folder", "imagefolder", ""},
    ForeignValue{"imagenet", "imagefolder", "ImageNet's train/ and val/ trees, one folder per class"},
    ForeignValue{"csv", "list", "a .csv whose header names the path and label columns"},
    ForeignValue{"tsv", "list", ""},
    ForeignValue{"txt", "list", "PATH LABEL lines, as Caffe's train.txt"},
    ForeignValue{"filelist", "list", ""},
    ForeignValue{"file_list", "list", ""},
    ForeignValue{"mnist", "idx", ""},
    ForeignValue{"fashion_mnist", "idx", ""},
    ForeignValue{"fashionmnist", "idx", ""},
    ForeignValue{"cross_entropy", "ce", ""},
    ForeignValue{"crossentropy", "ce", ""},
    ForeignValue{"bce_with_logits", "bce", ""},
    ForeignValue{"binary_cross_entropy", "bce", ""},
};

struct ForeignSweepWord {
  const char* word;
  const char* hint;
};

// Weights & Biases sweep configs, Optuna studies and Ray Tune's tune_config, as a team writes its
// first cvtrain space file from one of them.
constexpr std::array kForeignSweepWords{
    ForeignSweepWord{"parameters", "W&B's parameters: is space: here, each key a dotted recipe key (optim.lr)"},
    ForeignSweepWord{"param_space", "Ray Tune's param_space is space: here, each key a dotted recipe key (optim.lr)"},
    ForeignSweepWord{"method", "W&B's method: is sampler: here (grid, random or tpe; bayes is tpe)"},
    ForeignSweepWord{"search_alg", "sampler: (grid, random or tpe)"},
    ForeignSweepWord{"goal", "W&B's metric goal is mode: here (max or min), beside metric: NAME"},
    ForeignSweepWord{"direction", "Optuna's direction is mode: here (max or min)"},
    ForeignSweepWord{"run_cap", "W&B's run_cap is trials: here"},
    ForeignSweepWord{"n_trials", "Optuna's n_trials is trials: here"},
    ForeignSweepWord{"num_samples", "Ray Tune's num_samples is trials: here"},
    ForeignSweepWord{"count", "trials:"},
    ForeignSweepWord{"n_jobs", "Optuna's n_jobs is parallel: here"},
    ForeignSweepWord{"max_concurrent_trials", "Ray Tune's max_concurrent_trials is parallel: here"},
    ForeignSweepWord{"early_terminate",
                     "W&B's early_terminate (hyperband) is early_stopping: {grace: EPOCHS, reduction: FACTOR} here (ASHA)"},
    ForeignSweepWord{"pruner", "Optuna's pruner is early_stopping: {grace: EPOCHS, reduction: FACTOR} here (ASHA)"},
    ForeignSweepWord{"scheduler", "Ray Tune's scheduler (ASHA) is early_stopping: {grace: EPOCHS, reduction: FACTOR} here"},
    ForeignSweepWord{"bayes", "W&B's bayes is tpe here"},
    ForeignSweepWord{"bayesian", "tpe"},
    ForeignSweepWord{"maximize", "max"},
    ForeignSweepWord{"minimize", "min"},
    ForeignSweepWord{"values", "W&B's values: is choice: here ({choice: [...]} or a plain list)"},
    ForeignSweepWord{"distribution",
                     "W&B's distribution/min/max are one key here: {uniform: [min, max]}, {loguniform: [min, max]}, {int: [min, max]}"},
    ForeignSweepWord{"log_uniform_values", "loguniform: [min, max]"},
    ForeignSweepWord{"int_uniform", "int: [min, max]"},
    ForeignSweepWord{"categorical", "choice: [...]"},
    ForeignSweepWord{"randint", "int: [min, max]"},
};

// Lower case, '-' as '_', so that timm's command-line spelling (--batch-size) is found too.
std::string normalised(const std::string& key) {
  std::string out = key;
  for (char& c : out) c = c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string last_part(const std::string& key) {
  const auto dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

std::optional<std::string> foreign_name_hint(const std::string& key) {
  for (const std::string& name : {key, last_part(key)}) {
    const auto it = std::find_if(kForeignNames.begin(), kForeignNames.end(), [&](const ForeignName& f) { return name == f.name; });
    if (it != kForeignNames.end()) return std::string(it->hint);
  }
  return std::nullopt;
}

// Keys whose last part is `key`'s: optim.lr for train.lr, precision for train.precision.
std::vector<std::string> same_name_elsewhere(const std::string& key, const std::vector<std::string>& recipe_keys) {
  std::vector<std::string> matches;
  for (const std::string& candidate : recipe_keys)
    if (candidate != key && last_part(candidate) == last_part(key)) matches.push_back("'" + candidate + "'");
  return matches;
}

}  // namespace

std::optional<std::string> value_hint(const std::string& value, const std::vector<std::string>& choices) {
  std::string lower = value;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto offered = [&](const std::string& choice) { return std::find(choices.begin(), choices.end(), choice) != choices.end(); };
  if (lower != value && offered(lower)) return fmt::format("choices are lower case: '{}'", lower);
  for (const ForeignValue& f : kForeignValues) {
    if (lower != f.value || !offered(f.choice)) continue;
    return *f.note ? fmt::format("cvtrain spells it '{}': {}", f.choice, f.note) : fmt::format("cvtrain spells it '{}'", f.choice);
  }
  return std::nullopt;
}

std::optional<std::string> sweep_word_hint(const std::string& word) {
  const std::string name = normalised(word);
  for (const ForeignSweepWord& f : kForeignSweepWords)
    if (name == f.word) return std::string(f.hint);
  return std::nullopt;
}

std::vector<std::string> foreign_name_targets() {
  std::vector<std::string> targets;
  for (const ForeignName& f : kForeignNames) {
    const std::string hint = f.hint;
    targets.push_back(hint.substr(0, hint.find_first_of(" ,:")));
  }
  return targets;
}

std::optional<std::string> key_hint(const std::string& unknown_key, const std::vector<std::string>& recipe_keys) {
  const std::string key = normalised(unknown_key);
  if (std::find(recipe_keys.begin(), recipe_keys.end(), key) != recipe_keys.end())
    return fmt::format("keys are lower case with '_': '{}'", key);
  if (const auto hint = foreign_name_hint(key)) return fmt::format("cvtrain calls it {}", *hint);
  const auto elsewhere = same_name_elsewhere(key, recipe_keys);
  if (!elsewhere.empty() && elsewhere.size() <= 3) return fmt::format("did you mean {}?", join(elsewhere, " or "));
  return std::nullopt;
}

}  // namespace cvtrain
