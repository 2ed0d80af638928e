// Parameters laid end to end (each in its own memory order), padded to a multiple of the world
// size and cut into equal shards, one per rank: the unit the sharded strategies communicate and
// the optimizer updates. Elementwise optimizers (SGD, AdamW) give the same result on a shard as on
// the parameters it covers, which is what makes zero1/zero2/fsdp equal ddp.
#pragma once

#include <map>

#include "cvtrain/models/safetensors.h"
#include "cvtrain/optim/optimizer.h"  // at::Tensor, torch::nn::Module, torch::optim::Optimizer

namespace cvtrain {

class Communicator;

class FlatShard {
 public:
  struct Entry {
    std::string name;
    at::Tensor parameter;
    int64_t offset = 0;
  };
  // `decay`: which weight-decay group the shard belongs to. The shard starts as this rank's part
  // of the parameters' current values.
  FlatShard(std::vector<std::pair<std::string, at::Tensor>> parameters, bool decay, int rank, int world);

  const std::vector<Entry>& entries() const { return entries_; }
  bool decay() const { return decay_; }
  int64_t padded_numel() const { return padded_; }
  at::Tensor& shard() { return shard_; }  // this rank's values, fp32, a leaf: the optimizer's tensor
  const at::Tensor& shard() const { return shard_; }

  // The parameter `entry` as a view into a flat tensor of padded_numel() (its strides kept).
  at::Tensor view_of(const at::Tensor& flat, size_t entry) const;
  at::Tensor flatten_parameters() const;
  // This rank's slice of the parameters' gradients laid out flat (zeros where there is none),
  // without building the whole of it.
  at::Tensor part_of_gradients() const;
  at::Tensor part_of(const at::Tensor& flat) const;  // this rank's slice
  // Moves the parameters into one flat buffer of padded_numel() (values kept, identities kept:
  // each parameter's storage becomes the buffer's) and returns the buffer.
  at::Tensor place_parameters();
  // Makes the shard this rank's slice of `flat` itself rather than a copy (zero1/zero2: the
  // optimizer then updates the parameters in place, with no second fp32 copy).
  void share_shard_with(const at::Tensor& flat);

  // Named optimizer state of the shard ("name/field", whole tensors; collective) and back.
  NamedTensors named_state(torch::optim::Optimizer& optimizer, Communicator& comm);
  void load_state(torch::optim::Optimizer& optimizer, const std::map<std::string, at::Tensor>& saved);

 private:
  std::vector<Entry> entries_;
  bool decay_;
  int rank_, world_;
  int64_t padded_ = 0, shard_numel_ = 0;
  at::Tensor shard_;
};

// Module path -> tensor for every parameter and buffer (the live tensors, not copies).
NamedTensors named_model_tensors(torch::nn::Module& model);
// Copies saved tensors into the targets of the same name; Error naming `source` for a missing one,
// an extra one or a shape mismatch.
void copy_by_name(const NamedTensors& saved, const NamedTensors& targets, const std::string& source);
// Optimizer state keyed by parameter name, for optimizers over the model's own parameters.
NamedTensors named_parameter_state(torch::optim::Optimizer& optimizer, torch::nn::Module& model);
void load_named_parameter_state(torch::optim::Optimizer& optimizer, torch::nn::Module& model, const NamedTensors& saved);
int64_t optimizer_state_bytes(torch::optim::Optimizer& optimizer);
int64_t parameter_bytes(torch::nn::Module& model);
// named_model_tensors, detached: what a checkpoint saves of a model every rank holds whole.
NamedTensors detached_model_state(torch::nn::Module& model);

}  // namespace cvtrain
