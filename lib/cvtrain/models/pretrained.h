// Starting from published weights: a safetensors file with torchvision (ResNet) or timm (ViT) key
// names loads by name; a classifier head of another size is re-initialised, a ViT position
// embedding of another grid is interpolated, and missing or unexpected keys are listed.
#pragma once

#include <string>
#include <vector>

namespace cvtrain {

class Classifier;

struct PretrainedReport {
  std::vector<std::string> missing;         // in the model, not in the file (left as initialised)
  std::vector<std::string> unexpected;      // in the file, not in the model (ignored)
  std::vector<std::string> reinitialised;   // head tensors whose class count differs
  bool position_embedding_resized = false;
  // The file held a segmentation model's encoder only (ImageNet weights): its classification head
  // was dropped and `decoder` lists the model's tensors outside the encoder, left as initialised.
  bool encoder_only = false;
  std::vector<std::string> dropped_head, decoder;
};

// Copies every tensor of `file` into the model tensor of the same name. With `strict`, missing or
// unexpected keys are an Error listing them; a shape mismatch outside the head and the position
// embedding is always an Error naming the key and both shapes.
// A segmentation model also takes its encoder's ImageNet weights (Classifier::encoder_prefix):
// torchvision's resnet50 file ("conv1.weight" loads as "backbone.conv1.weight") or transformers'
// nvidia/mit-b0 ("segformer.encoder..."); their classification head is dropped, the decoder is
// not missing, and `strict` still asks every encoder tensor to be there.
PretrainedReport load_pretrained(Classifier& model, const std::string& file, bool strict);

}  // namespace cvtrain
