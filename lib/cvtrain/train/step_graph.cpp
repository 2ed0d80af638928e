// StepGraph (see step_graph.h): warm-up and capture on a side stream, as torch.cuda.graph does, in
// thread-local capture mode so that the input pipeline's threads may keep copying meanwhile; the
// captured step's memory comes from the graph's private pool and stays at fixed addresses.
#include "cvtrain/train/step_graph.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <fmt/format.h>

#include "cvtrain/core/error.h"
#include "cvtrain/recipe/strategy_traits.h"

namespace cvtrain {

std::optional<std::string> graph_refusal(const GraphConditions& conditions) {
  if (!conditions.cuda) return std::string("this run is not on a CUDA device, and CUDA graphs need one");
  if (!conditions.update_decided_on_device)
    return std::string("the optimizer decides on the host whether to skip a step (optim.implementation: fused decides on the device)");
  if (const char* gathers = strategy_traits(conditions.strategy).gathers_in_step)
    return fmt::format("{}, which a graph's fixed addresses cannot follow", gathers);
  return std::nullopt;
}

struct StepGraph::Cuda {
  at::cuda::CUDAStream stream = at::cuda::getStreamFromPool();
  std::unique_ptr<at::cuda::CUDAGraph> graph;
};

StepGraph::StepGraph(c10::Device device, int64_t micro_batches, int64_t warmup_steps)
    : device_(device),
      warmup_steps_(warmup_steps),
      images_(static_cast<size_t>(micro_batches)),
      targets_(static_cast<size_t>(micro_batches)) {
  const auto options = at::TensorOptions(device).dtype(at::kFloat);
  host_flags_ = at::zeros({2}, options);
  factors_ = at::ones({2}, options);
  if (device.is_cuda()) cuda_ = std::make_unique<Cuda>();
}

StepGraph::~StepGraph() = default;

bool StepGraph::captured() const { return cuda_ && cuda_->graph; }

bool StepGraph::stage_batch(int64_t micro, const at::Tensor& images, const at::Tensor& targets) {
  at::Tensor& static_images = images_[static_cast<size_t>(micro)];
  at::Tensor& static_targets = targets_[static_cast<size_t>(micro)];
  if (!static_images.defined()) {
    // The layout of the batch (channels_last included), so the copy is a straight one.
    static_images = at::empty_like(images, at::MemoryFormat::Preserve);
    static_targets = at::empty_like(targets, at::MemoryFormat::Preserve);
  }
  const auto same = [](const at::Tensor& a, const at::Tensor& b) { return a.sizes() == b.sizes() && a.dtype() == b.dtype(); };
  if (!same(static_images, images) || !same(static_targets, targets)) return false;
  static_images.copy_(images);
  static_targets.copy_(targets);
  return true;
}

void StepGraph::stage_flags(bool stop, bool save_due) {
  host_flags_.select(0, 0).fill_(stop ? 1.0 : 0.0);
  host_flags_.select(0, 1).fill_(save_due ? 1.0 : 0.0);
}

void StepGraph::stage_factors(double loss, double gradients) {
  factors_.select(0, 0).fill_(loss);
  factors_.select(0, 1).fill_(gradients);
}

void StepGraph::keep(const Outputs& produced) {
  if (!outputs_.loss.defined()) {
    outputs_.loss = at::empty_like(produced.loss);
    outputs_.readout = at::empty_like(produced.readout);
  }
  outputs_.loss.copy_(produced.loss);
  outputs_.readout.copy_(produced.readout);
}

void StepGraph::run(const std::function<Outputs()>& body) {
  if (!cuda_ || capture_failure_) {
    keep(body());
    return;
  }
  if (captured()) {
    cuda_->graph->replay();
    return;
  }
  if (steps_run_++ < warmup_steps_) {
    run_on_capture_stream([&] { keep(body()); });
    return;
  }
  try {
    capture(body);
  } catch (const Error& failure) {
    // Nothing ran during the capture (it only records), so the step runs now, and so do the rest.
    capture_failure_ = failure.what();
    keep(body());
    return;
  }
  cuda_->graph->replay();  // the captured step has not run yet: capture only records it
}

std::optional<std::string> StepGraph::take_capture_failure() {
  if (!capture_failure_ || failure_told_) return std::nullopt;
  failure_told_ = true;
  return capture_failure_;
}

// The stream waits for what the current stream queued (the staged inputs), and the current stream
// for what it then ran, so the side stream is invisible to the callers.
void StepGraph::run_on_capture_stream(const std::function<void()>& work) {
  const at::cuda::CUDAStream current = at::cuda::getCurrentCUDAStream(device_.index());
  at::cuda::CUDAEvent staged, done;
  staged.record(current);
  staged.block(cuda_->stream);
  {
    const c10::cuda::CUDAStreamGuard on_side(cuda_->stream);
    work();
    done.record(cuda_->stream);
  }
  done.block(current);
}

void StepGraph::capture(const std::function<Outputs()>& body) {
  auto graph = std::make_unique<at::cuda::CUDAGraph>();
  at::cuda::CUDAGraph* capturing = graph.get();
  run_on_capture_stream([&] {
    capturing->capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
    try {
      keep(body());
      capturing->capture_end();
    } catch (const std::exception& failure) {
      try {
        capturing->capture_end();  // ends the stream's capture; an invalidated one throws again
      } catch (...) {
      }
      const auto* c10_error = dynamic_cast<const c10::Error*>(&failure);
      throw Error(fmt::format("the step could not be captured: {}", c10_error ? c10_error->what_without_backtrace() : failure.what()));
    }
  });
  cuda_->graph = std::move(graph);
}

}  // namespace cvtrain
