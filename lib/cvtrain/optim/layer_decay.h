// optim.layer_decay: timm's layer-wise learning-rate decay for fine-tuning (BEiT's, timm's
// param_groups_layer_decay). Parameters are grouped into layers by timm's group_matcher patterns
// for the architecture (stem, each block in order, then the head), and layer i of n takes the
// learning rate times decay^(n - 1 - i): the head full, the stem least. Torch-free: names only.
#pragma once

#include <string>
#include <vector>

namespace cvtrain {

// Whether model.arch has timm's layer grouping here (ViT, ConvNeXt, ResNet).
bool has_layer_grouping(const std::string& arch);

// The learning-rate scale of each parameter, by its name (as torchvision/timm name it).
// Throws Error for an architecture without grouping.
std::vector<double> layer_decay_scales(const std::vector<std::string>& names, const std::string& arch, double decay);

}  // namespace cvtrain
