// train.cuda_graphs: one optimizer step captured as a CUDA graph and replayed, so that a step is one
// launch instead of thousands. StepGraph owns what a replay reads and writes at fixed addresses (the
// static inputs the trainer stages each step, the static outputs it reads after) and the graph;
// graph_refusal says, once at the start, why a run cannot use one. What the step does is
// TrainStep's; this holds only the capture.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cvtrain {

enum class StrategyKind;

// What decides whether a run's steps can be captured, known before the first step.
struct GraphConditions {
  bool cuda = false;                   // the run trains on a CUDA device
  bool update_decided_on_device = false;  // the optimizer skips bad steps without the host (optim.implementation: fused)
  StrategyKind strategy;
};
// Why the run must stay eager, as the end of a sentence ("train.cuda_graphs: running eager: ..."),
// or nullopt when it can be captured.
std::optional<std::string> graph_refusal(const GraphConditions& conditions);

// Eager steps on the capture stream before the capture, as torch.cuda.graph's examples take.
inline constexpr int64_t kGraphWarmupSteps = 3;

class StepGraph {
 public:
  // On CUDA the first `warmup_steps` run the body eagerly on the capture stream (cuBLAS, cuDNN and
  // the allocator settle there), the next one is captured and replayed, every later one replayed.
  // On another device the body just runs: the same path without the capture, which tests use.
  StepGraph(c10::Device device, int64_t micro_batches, int64_t warmup_steps = kGraphWarmupSteps);
  ~StepGraph();

  // Copies micro-batch `micro`'s images and targets into the static inputs. False when their shape
  // or type differs from the captured one (this step must then run eagerly).
  bool stage_batch(int64_t micro, const at::Tensor& images, const at::Tensor& targets);
  const at::Tensor& images(int64_t micro) const { return images_[static_cast<size_t>(micro)]; }
  const at::Tensor& targets(int64_t micro) const { return targets_[static_cast<size_t>(micro)]; }
  // Host decisions a replay must see: [stop requested, checkpoint due] and the fault injection's
  // factors [loss, gradients]; filled with kernels, never a synchronisation.
  void stage_flags(bool stop, bool save_due);
  void stage_factors(double loss, double gradients);
  const at::Tensor& host_flags() const { return host_flags_; }
  const at::Tensor& factors() const { return factors_; }

  // Runs the step: `body` reads the static inputs and returns its outputs (the step's loss, the
  // control readout), which are copied into static outputs. When the capture fails, this step and
  // every later one run the body eagerly.
  struct Outputs {
    at::Tensor loss, readout;
  };
  void run(const std::function<Outputs()>& body);
  const Outputs& outputs() const { return outputs_; }
  bool captured() const;
  // Why the capture failed, once, for the log; nullopt otherwise.
  std::optional<std::string> take_capture_failure();

 private:
  void run_on_capture_stream(const std::function<void()>& work);
  void capture(const std::function<Outputs()>& body);
  void keep(const Outputs& produced);

  c10::Device device_;
  int64_t warmup_steps_, steps_run_ = 0;
  std::vector<at::Tensor> images_, targets_;
  at::Tensor host_flags_, factors_;
  Outputs outputs_;
  std::optional<std::string> capture_failure_;
  bool failure_told_ = false;
  struct Cuda;  // the graph and its stream, in step_graph.cpp
  std::unique_ptr<Cuda> cuda_;
};

}  // namespace cvtrain
