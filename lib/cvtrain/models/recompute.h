// Activation recomputation (model.grad_checkpointing; PyTorch's "activation checkpointing"): a block
// keeps only its input for backward, and backward runs the block's forward again to rebuild what it
// needs — less memory, ~1/3 more compute. Named apart from train/checkpoint, which saves runs.
#pragma once

#include <ATen/core/Tensor.h>

namespace cvtrain {

// A residual block that can be recomputed: forward_block must be a function of its input, its
// parameters and the random-number state only (the state is saved and replayed).
class RecomputableBlock {
 public:
  virtual ~RecomputableBlock() = default;
  virtual at::Tensor forward_block(const at::Tensor& input) = 0;
};

// block.forward_block(input), checkpointed when gradients are being recorded; plain otherwise.
at::Tensor run_recomputed(RecomputableBlock& block, const at::Tensor& input);

// True on this thread while backward re-runs a block: BatchNorm then uses the batch statistics
// without updating its running averages a second time.
bool is_recomputing();

}  // namespace cvtrain
