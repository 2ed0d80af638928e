// optim.lr_mult: learning-rate multipliers by parameter name, as mmseg's paramwise_cfg custom_keys
// give a decode head 10 times the backbone's rate.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace cvtrain {

// Each name's multiplier: that of the longest key the name contains (of keys as long, the first by
// name), as mmengine picks among custom_keys; 1 where none does.
std::vector<double> lr_mult_scales(const std::vector<std::string>& names, const std::map<std::string, double>& lr_mult);

}  // namespace cvtrain
