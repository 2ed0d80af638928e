// As mmengine's DefaultOptimWrapperConstructor reads paramwise_cfg.custom_keys: the keys sorted by
// name, then longest first (a stable sort), and a parameter takes the first key its name contains.
#include "cvtrain/optim/lr_mult.h"

#include <algorithm>

namespace cvtrain {

std::vector<double> lr_mult_scales(const std::vector<std::string>& names, const std::map<std::string, double>& lr_mult) {
  std::vector<std::pair<std::string, double>> keys(lr_mult.begin(), lr_mult.end());  // a map: sorted by name already
  std::stable_sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  std::vector<double> scales;
  for (const std::string& name : names) {
    double scale = 1.0;
    for (const auto& [key, mult] : keys)
      if (name.find(key) != std::string::npos) {
        scale = mult;
        break;
      }
    scales.push_back(scale);
  }
  return scales;
}

}  // namespace cvtrain
