// LossScaler: scaling and unscaling are inverse, overflow is found, the scale halves on overflow
// and doubles after 2,000 clean steps, as torch.amp.GradScaler does.
#include "torch_catch.h"

#include <ATen/ATen.h>

#include <limits>

#include "cvtrain/train/loss_scaler.h"

using namespace cvtrain;

TEST_CASE("the loss scaler scales, unscales, finds overflow and adapts the scale", "[train]") {
  LossScaler scaler(true, c10::Device(c10::kCPU));
  CHECK(scaler.state().scale == 65536.0);
  at::Tensor w = at::ones({3}).set_requires_grad(true);
  scaler.scale((w * at::tensor({1.0f, 2.0f, 3.0f})).sum()).backward();
  CHECK(w.grad()[2].item<float>() == 3.0f * 65536.0f);
  const at::Tensor clean = scaler.unscale({w});
  CHECK(clean.item<float>() == 0.0f);
  CHECK(at::equal(w.grad(), at::tensor({1.0f, 2.0f, 3.0f})));

  w.mutable_grad()[1] = std::numeric_limits<float>::infinity();
  CHECK(scaler.unscale({w}).item<float>() == 1.0f);
  scaler.update(true);
  CHECK(scaler.state().scale == 32768.0);
  for (int step = 0; step < 1999; ++step) scaler.update(false);
  CHECK(scaler.state().scale == 32768.0);
  CHECK(scaler.state().growth_tracker == 1999);
  scaler.update(false);
  CHECK(scaler.state().scale == 65536.0);
  CHECK(scaler.state().growth_tracker == 0);

  LossScaler off(false, c10::Device(c10::kCPU));
  const at::Tensor loss = at::full({}, 2.5);
  CHECK(off.scale(loss).item<double>() == 2.5);
  off.update(true);
  CHECK(off.state().scale == 65536.0);
}
