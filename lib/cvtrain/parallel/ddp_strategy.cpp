// ddp's buckets, gradient hooks and overlapped all-reduces (see ddp_strategy.h).
#include "cvtrain/parallel/ddp_strategy.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/nn/module.h>
#include <torch/utils.h>

#include "cvtrain/core/error.h"
#include "cvtrain/core/timer.h"
#include "cvtrain/comm/communicator.h"

namespace cvtrain {

DdpStrategy::DdpStrategy(torch::nn::Module& model, Communicator& comm, double bucket_mb) : ReplicatedStrategy(model), comm_(comm) {
  for (const auto& p : model.parameters())
    if (p.requires_grad()) params_.push_back(p);
  broadcast_from_rank0(model.parameters(), comm_);
  sync_buffers();
  build_buckets(static_cast<int64_t>(bucket_mb * 1024 * 1024));
  for (size_t i = 0; i < params_.size(); ++i) params_[i].register_hook([this, i](const at::Tensor& grad) { on_gradient(i, grad); });
}

void DdpStrategy::before_backward(bool last_micro_step) {
  syncing_ = last_micro_step;
  if (!syncing_) return;
  for (auto& b : buckets_) {
    b.ready = 0;
    b.pending.reset();
  }
  arrived_.assign(params_.size(), false);
}

void DdpStrategy::after_backward(bool last_micro_step) {
  if (!last_micro_step) return;
  Stopwatch wait;
  for (auto& b : buckets_) {
    if (!b.pending) launch_incomplete(b);
    b.pending->wait();
  }
  const double scale = 1.0 / comm_.world_size();
  for (auto& b : buckets_)
    for (size_t k = 0; k < b.params.size(); ++k) params_[b.params[k]].mutable_grad() = slot(b, k).mul(scale);
  comm_wait_s_ += wait.seconds();
  syncing_ = false;
}

void DdpStrategy::sync_buffers() { broadcast_from_rank0(model_.buffers(), comm_); }

// A parameter's place in its bucket, laid out as the parameter is (channels_last weights too), so
// the averaged gradient has the parameter's strides: the optimizer then walks both in one order,
// and the gradient norm sums in the order PyTorch's DDP (whose bucket views do the same) gives it.
at::Tensor DdpStrategy::slot(const Bucket& bucket, size_t k) const {
  const at::Tensor& p = params_[bucket.params[k]];
  if (!p.is_non_overlapping_and_dense()) return bucket.flat.narrow(0, bucket.offsets[k], p.numel()).view_as(p);
  return bucket.flat.as_strided(p.sizes(), p.strides(), bucket.offsets[k]);
}

void DdpStrategy::build_buckets(int64_t bucket_bytes) {
  bucket_of_.resize(params_.size());
  Bucket current;
  int64_t bytes = 0, numel = 0;
  auto close = [&] {
    if (current.params.empty()) return;
    current.flat = at::zeros({numel}, params_[current.params[0]].options());
    buckets_.push_back(std::move(current));
    current = Bucket{};
    bytes = numel = 0;
  };
  for (size_t i = params_.size(); i-- > 0;) {
    if (!current.params.empty() && params_[i].options().dtype() != params_[current.params[0]].options().dtype()) close();
    bucket_of_[i] = {buckets_.size(), current.params.size()};
    current.params.push_back(i);
    current.offsets.push_back(numel);
    numel += params_[i].numel();
    bytes += params_[i].numel() * static_cast<int64_t>(params_[i].element_size());
    if (bytes >= bucket_bytes) close();
  }
  close();
}

// The hook sees this backward's gradient before it is added to .grad: on the last micro-step
// the full gradient is what accumulated so far plus this one.
void DdpStrategy::on_gradient(size_t index, const at::Tensor& grad) {
  if (!syncing_) return;
  const auto [b, k] = bucket_of_[index];
  Bucket& bucket = buckets_[b];
  const at::Tensor& p = params_[index];
  at::Tensor place = slot(bucket, k);
  torch::NoGradGuard no_grad;
  if (p.grad().defined())
    at::add_out(place, p.grad(), grad);
  else
    place.copy_(grad);
  std::lock_guard<std::mutex> lock(mutex_);
  arrived_[index] = true;
  if (++bucket.ready == bucket.params.size()) bucket.pending = comm_.all_reduce_sum_async(bucket.flat, bucket_name(b));
}

// Parameters that took no part in this backward contribute what they accumulated, or zeros.
void DdpStrategy::launch_incomplete(Bucket& bucket) {
  torch::NoGradGuard no_grad;
  for (size_t k = 0; k < bucket.params.size(); ++k) {
    if (arrived_[bucket.params[k]]) continue;
    const at::Tensor& p = params_[bucket.params[k]];
    at::Tensor place = slot(bucket, k);
    if (p.grad().defined())
      place.copy_(p.grad());
    else
      place.zero_();
  }
  bucket.pending = comm_.all_reduce_sum_async(bucket.flat, bucket_name(static_cast<size_t>(&bucket - buckets_.data())));
}

std::string DdpStrategy::bucket_name(size_t b) const {
  return fmt::format("gradient all-reduce (bucket {} of {}, {:.2f} MB)", b + 1, buckets_.size(),
                     static_cast<double>(buckets_[b].flat.numel() * buckets_[b].flat.element_size()) / 1e6);
}

// ---- make_strategy

}  // namespace cvtrain
