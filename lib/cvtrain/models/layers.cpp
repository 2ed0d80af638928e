// Shared layers: truncated-normal initialisation and drop-path.
#include "cvtrain/models/layers.h"

#include <ATen/ATen.h>

#include <cmath>

namespace cvtrain {

void trunc_normal_(at::Tensor tensor, double mean, double std, double lo, double hi) {
  // Inverse-CDF sampling, as PyTorch does: uniform over [cdf(lo), cdf(hi)], then erfinv.
  const auto cdf = [](double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; };
  const double l = cdf((lo - mean) / std), u = cdf((hi - mean) / std);
  tensor.uniform_(2 * l - 1, 2 * u - 1).erfinv_().mul_(std * std::sqrt(2.0)).add_(mean).clamp_(lo, hi);
}

at::Tensor drop_path(const at::Tensor& branch, double rate, bool training) {
  if (!training || rate <= 0) return branch;
  const double keep = 1.0 - rate;
  std::vector<int64_t> shape(static_cast<size_t>(branch.dim()), 1);
  shape[0] = branch.size(0);
  return branch * at::empty(shape, branch.options()).bernoulli_(keep).div_(keep);
}

std::vector<double> drop_path_rates(double rate, int64_t blocks) {
  std::vector<double> rates(static_cast<size_t>(blocks), 0.0);
  for (int64_t i = 1; i < blocks; ++i) rates[static_cast<size_t>(i)] = rate * static_cast<double>(i) / static_cast<double>(blocks - 1);
  return rates;
}

}  // namespace cvtrain
