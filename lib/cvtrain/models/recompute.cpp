// run_recomputed as a custom autograd function. Forward runs the block without recording a graph;
// backward replays it with the same random-number state and autocast settings, then back-propagates
// through the replay (parameter gradients accumulate, and their hooks fire, as in a plain backward).
#include "cvtrain/models/recompute.h"

#include "cvtrain/models/classifier.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/autograd.h>

#include <mutex>

namespace cvtrain {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

thread_local bool t_recomputing = false;

at::Generator default_generator(const at::Tensor& input) {
  return input.is_cpu() ? at::detail::getDefaultCPUGenerator() : at::globalContext().defaultGenerator(input.device());
}

at::Tensor generator_state(at::Generator generator) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void set_generator_state(at::Generator generator, const at::Tensor& state) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

// Sets the generators to the states forward saw; puts back the current ones when done, so the
// replay consumes no randomness of the run.
class RandomStateReplay {
 public:
  RandomStateReplay(const at::Tensor& input, const at::Tensor& cpu_state, const at::Tensor& device_state)
      : cpu_(at::detail::getDefaultCPUGenerator()), cpu_state_(generator_state(cpu_)) {
    set_generator_state(cpu_, cpu_state);
    if (device_state.defined()) {
      device_ = default_generator(input);
      device_state_ = generator_state(device_);
      set_generator_state(device_, device_state);
    }
  }
  ~RandomStateReplay() {
    set_generator_state(cpu_, cpu_state_);
    if (device_.defined()) set_generator_state(device_, device_state_);
  }
  RandomStateReplay(const RandomStateReplay&) = delete;
  RandomStateReplay& operator=(const RandomStateReplay&) = delete;

 private:
  at::Generator cpu_, device_;
  at::Tensor cpu_state_, device_state_;
};

// Autocast as forward had it (backward runs on another thread, often outside the forward's scope);
// the cast cache is cleared at the end so no stale weight copy outlives this replay.
class AutocastReplay {
 public:
  AutocastReplay(c10::DeviceType device, bool enabled, at::ScalarType dtype)
      : device_(device), previous_enabled_(at::autocast::is_autocast_enabled(device)), previous_dtype_(at::autocast::get_autocast_dtype(device)) {
    at::autocast::set_autocast_enabled(device_, enabled);
    at::autocast::set_autocast_dtype(device_, dtype);
    at::autocast::increment_nesting();
  }
  ~AutocastReplay() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(device_, previous_enabled_);
    at::autocast::set_autocast_dtype(device_, previous_dtype_);
  }
  AutocastReplay(const AutocastReplay&) = delete;
  AutocastReplay& operator=(const AutocastReplay&) = delete;

 private:
  c10::DeviceType device_;
  bool previous_enabled_;
  at::ScalarType previous_dtype_;
};

struct RecomputeFlag {
  RecomputeFlag() { t_recomputing = true; }
  ~RecomputeFlag() { t_recomputing = false; }
};

struct CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, RecomputableBlock* block) {
    const c10::DeviceType device = input.device().type();
    ctx->save_for_backward({input});
    ctx->saved_data["block"] = reinterpret_cast<int64_t>(block);
    ctx->saved_data["cpu_rng"] = generator_state(at::detail::getDefaultCPUGenerator());
    if (!input.is_cpu()) ctx->saved_data["device_rng"] = generator_state(default_generator(input));
    ctx->saved_data["autocast"] = at::autocast::is_autocast_enabled(device);
    ctx->saved_data["autocast_dtype"] = static_cast<int64_t>(at::autocast::get_autocast_dtype(device));
    return block->forward_block(input);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor input = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    auto* block = reinterpret_cast<RecomputableBlock*>(ctx->saved_data["block"].toInt());
    const auto device_rng = ctx->saved_data.find("device_rng");
    at::Tensor output;
    {
      RandomStateReplay random(input, ctx->saved_data["cpu_rng"].toTensor(),
                               device_rng == ctx->saved_data.end() ? at::Tensor() : device_rng->second.toTensor());
      AutocastReplay autocast(input.device().type(), ctx->saved_data["autocast"].toBool(),
                              static_cast<at::ScalarType>(ctx->saved_data["autocast_dtype"].toInt()));
      RecomputeFlag recomputing;
      at::AutoGradMode record(true);
      output = block->forward_block(input);
    }
    torch::autograd::backward({output}, {grads[0]});
    return {input.grad(), at::Tensor()};
  }
};

}  // namespace

at::Tensor run_recomputed(RecomputableBlock& block, const at::Tensor& input) {
  if (!at::GradMode::is_enabled() || !input.requires_grad()) return block.forward_block(input);
  return CheckpointFunction::apply(input, &block);
}

bool is_recomputing() { return t_recomputing; }

// ---- Classifier's block runner (declared in classifier.h) ----

void Classifier::add_block(torch::nn::Module& module, RecomputableBlock& block) {
  block_modules_.push_back(&module);
  runnable_.push_back(&block);
}

at::Tensor Classifier::run_block(size_t index, const at::Tensor& input) {
  if (hooks_) hooks_->before_block(index);
  RecomputableBlock& block = *runnable_[index];
  at::Tensor output = grad_checkpointing_ ? run_recomputed(block, input) : block.forward_block(input);
  return hooks_ ? hooks_->after_block(index, output) : output;
}

}  // namespace cvtrain
