// The model interface the trainer sees: an nn::Module mapping images [B,C,H,W] to logits, [B,K] for a
// classifier and [B,K,H,W] for a segmentation model, whose residual blocks run through one place
// (activation checkpointing, FSDP's gathering).
#pragma once

#include <torch/nn/module.h>

#include <memory>
#include <string>
#include <vector>

namespace cvtrain {

struct ModelSpec;
class RecomputableBlock;

// Called around every residual block's forward: FSDP gathers the block's parameters before and
// frees them after (and arranges to gather them again for backward).
class BlockHooks {
 public:
  virtual ~BlockHooks() = default;
  virtual void before_block(size_t index) = 0;
  virtual at::Tensor after_block(size_t index, const at::Tensor& output) = 0;
};

class Classifier : public torch::nn::Module {
 public:
  virtual at::Tensor forward(const at::Tensor& images) = 0;
  // Every output the loss weighs, the main one (forward's) first: a segmentation model's auxiliary
  // head adds its logits in training.
  virtual std::vector<at::Tensor> forward_outputs(const at::Tensor& images) { return {forward(images)}; }
  // Where a segmentation model's encoder sits in its names ("backbone.", "segformer."): ImageNet
  // weights of the bare backbone load under it (models/pretrained.h). Empty for classifiers.
  virtual std::string encoder_prefix() const { return {}; }
  // Convolutional models run faster on channels_last (NHWC) inputs and weights.
  virtual bool is_convolutional() const { return false; }
  // The residual blocks in forward order; empty for models without them.
  const std::vector<torch::nn::Module*>& blocks() const { return block_modules_; }
  void set_block_hooks(BlockHooks* hooks) { hooks_ = hooks; }
  // model.grad_checkpointing, as built; switchable, since only run_block reads it (the parity probe
  // runs one model both ways).
  void set_grad_checkpointing(bool on) { grad_checkpointing_ = on; }

 protected:
  // Models register their blocks once, in forward order, and run each through run_block.
  void add_block(torch::nn::Module& module, RecomputableBlock& block);
  at::Tensor run_block(size_t index, const at::Tensor& input);
  bool grad_checkpointing_ = false;  // model.grad_checkpointing

 private:
  std::vector<torch::nn::Module*> block_modules_;
  std::vector<RecomputableBlock*> runnable_;
  BlockHooks* hooks_ = nullptr;
};

// Builds model.arch (a recipe's was checked by model_problems of models/arch_traits.h); throws
// Error for a name no factory builds.
std::shared_ptr<Classifier> build_model(const ModelSpec& spec, int64_t in_channels);
// The names the factories build, sorted: the same as model_names() of arch_traits.h (tested).
std::vector<std::string> registered_model_names();

}  // namespace cvtrain
