// How gradients meet across ranks: the one place that knows model and communicator together.
// single: nothing to do; ddp: bucketed all-reduce overlapped with backward.
#pragma once

#include <memory>
#include <string>

namespace torch::nn {
class Module;
}

namespace cvtrain {

class Communicator;

class Strategy {
 public:
  virtual ~Strategy() = default;
  // Called before each micro-step's backward; only the last one of a step communicates.
  virtual void before_backward(bool last_micro_step) = 0;
  // Called after it; on the last micro-step leaves the averaged gradient in every .grad.
  virtual void after_backward(bool last_micro_step) = 0;
  // Makes every rank's buffers (BatchNorm statistics) rank 0's, before evaluation and saving.
  virtual void sync_buffers() = 0;
  // Seconds spent waiting for gradient communication after backward ended, since the last call.
  virtual double take_comm_wait_seconds() = 0;
};

// Broadcasts rank 0's parameters and buffers first, so every rank starts identical. With sync_bn,
// the model's BatchNorm layers compute training statistics over all ranks' batches.
std::unique_ptr<Strategy> make_strategy(const std::string& name, torch::nn::Module& model, Communicator& comm, double bucket_mb,
                                        bool sync_bn);

}  // namespace cvtrain
