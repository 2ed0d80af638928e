// Deep traces on demand (recipe section `profile`): LibTorch's Kineto profiler records CPU ops,
// CUDA kernels on a GPU and the input pipeline's threads over a window of steps on the chosen
// ranks, each step named as PyTorch's profiler names it (ProfilerStep#N) with cvtrain's phases
// as user ranges (TrainStep), and writes OUTPUT/traces/rank-R.pt.trace.json.gz, a Chrome trace
// with distributedInfo that Perfetto and Holistic Trace Analysis open. With `profile.tool: nsys`
// the window is instead bracketed by cudaProfilerStart/Stop for Nsight Systems' capture range.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace cvtrain {

struct ProfileSpec;

class TraceWindow {
 public:
  TraceWindow(const ProfileSpec& spec, int rank, int world_size, const std::string& backend, const std::string& output, bool on_gpu);
  ~TraceWindow();  // a window the run ended inside is written with the steps it has
  TraceWindow(TraceWindow&&) noexcept;
  TraceWindow& operator=(TraceWindow&&) noexcept;

  // Before step `step` (1-based): starts the profiler at the window's first step, opens the step's range.
  void begin_step(int64_t step);
  // After it: closes the range; after the window's last step, writes the trace.
  void end_step(int64_t step);
  // Whether the current step is recorded (its phases then become ranges).
  bool recording() const;

  struct Recorder;  // the profiler session, defined where LibTorch's profiler headers are included

 private:
  std::unique_ptr<Recorder> recorder_;  // null on ranks and runs without a Kineto window
  // profile.tool nsys: the window's steps, and whether the CUDA profiler is capturing now.
  int64_t capture_first_ = 0, capture_last_ = 0;
  bool capturing_ = false;
};

}  // namespace cvtrain
