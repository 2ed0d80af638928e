// FLOP counting through ATen's RecordFunction callbacks: each counted operator is counted once,
// at its outermost call (aten::linear, not the addmm inside it).
#include "cvtrain/models/flops.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <torch/utils.h>

#include <cstring>
#include <memory>

#include "cvtrain/models/classifier.h"

namespace cvtrain {
namespace {

thread_local double t_macs = 0;
thread_local int t_depth = 0;  // counted operators open on this thread

struct OpContext : at::ObserverContext {
  bool counted = false;
  double macs_per_output = 0;  // multiplied by the output's size at the end (convolution, matmuls)
};

bool is(const char* name, const char* wanted) { return std::strcmp(name, wanted) == 0; }

bool counts(const char* name) {
  for (const char* op : {"aten::convolution", "aten::linear", "aten::matmul", "aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm",
                         "aten::scaled_dot_product_attention"})
    if (is(name, op)) return true;
  return false;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  const char* name = fn.name();
  if (!counts(name)) return nullptr;
  auto context = std::make_unique<OpContext>();
  context->counted = t_depth++ == 0;
  if (!context->counted) return context;
  const auto inputs = fn.inputs();
  const auto tensor = [&](size_t i) { return inputs[i].toTensor(); };
  if (is(name, "aten::convolution")) {
    const at::Tensor weight = tensor(1);  // [out, in / groups, kh, kw...]: per output element
    context->macs_per_output = static_cast<double>(weight.numel() / weight.size(0));
  } else if (is(name, "aten::linear")) {
    const at::Tensor input = tensor(0), weight = tensor(1);
    t_macs += static_cast<double>(input.numel()) * static_cast<double>(weight.size(0));
  } else if (is(name, "aten::scaled_dot_product_attention")) {
    const at::Tensor q = tensor(0), k = tensor(1);  // [..., L, D] and [..., S, D]: QK^T and AV
    t_macs += 2.0 * static_cast<double>(q.numel()) * static_cast<double>(k.size(-2));
  } else {  // matrix products: every output element costs the inner dimension
    const at::Tensor a = tensor(is(name, "aten::addmm") || is(name, "aten::baddbmm") ? 1 : 0);
    context->macs_per_output = static_cast<double>(a.size(-1));
  }
  return context;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* raw) {
  auto* context = static_cast<OpContext*>(raw);
  if (!context) return;
  --t_depth;
  if (!context->counted || context->macs_per_output == 0) return;
  const auto& outputs = fn.outputs();
  if (!outputs.empty() && outputs[0].isTensor()) t_macs += context->macs_per_output * static_cast<double>(outputs[0].toTensor().numel());
}

}  // namespace

double forward_flops_per_image(Classifier& model, int64_t channels, int64_t image_size) {
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const auto parameters = model.parameters();
  const auto options = parameters.empty() ? at::TensorOptions() : parameters.front().options();
  const at::Tensor image = at::zeros({1, channels, image_size, image_size}, options);
  t_macs = 0;
  t_depth = 0;
  const at::CallbackHandle handle =
      at::addThreadLocalCallback(at::RecordFunctionCallback(on_start, on_end).needsInputs(true).needsOutputs(true));
  try {
    model.forward(image);
  } catch (...) {
    at::removeCallback(handle);
    model.train(was_training);
    throw;
  }
  at::removeCallback(handle);
  model.train(was_training);
  return 2.0 * t_macs;
}

}  // namespace cvtrain
