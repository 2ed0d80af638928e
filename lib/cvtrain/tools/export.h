// `cvtrain export`: a checkpoint's weights as one plain safetensors file, under the key names of
// torchvision (ResNets) and timm (ViT, ConvNeXt), so those libraries load it without edits.
#pragma once

#include <cstdint>
#include <string>

namespace cvtrain {

// What an exported file carries beside the weights, in its safetensors metadata: the recipe the
// run was trained with (the checkpoint's recipe.yaml) and its class names (its classes.txt, one per
// line), so `cvtrain predict --weights FILE` needs neither the run folder nor a recipe.
inline constexpr const char* kRecipeMetadata = "cvtrain.recipe";
inline constexpr const char* kClassNamesMetadata = "cvtrain.classes";

struct ExportResult {
  std::string checkpoint;  // the checkpoint folder the weights came from
  std::string arch;
  int64_t num_classes = 0, image_size = 0, in_channels = 0;
  bool small_stem = false;
  int64_t step = 0;
  int64_t tensors = 0, values = 0;  // tensors written and the numbers they hold
  bool ema = false;                 // the weight average was written
  int64_t class_names = 0;          // names carried in the metadata (0: the checkpoint had none)
};

// `source`: a checkpoint folder (step-N with its COMPLETE marker) or a run folder, whose newest
// complete checkpoint is taken. `dtype`: keep, fp32, bf16 or fp16 (floating tensors only; integer
// buffers such as BatchNorm's num_batches_tracked keep their type). Written through a temporary
// file and a rename. Throws Error naming the folder or file for anything missing or unreadable.
// `ema`: train.ema's weight average instead of the raw weights (an error naming the folder when
// the checkpoint has none).
ExportResult export_weights(const std::string& source, const std::string& out, const std::string& dtype, bool ema = false);

// Python lines that load the exported file into the reference library, or a note that the
// architecture has none.
std::string loading_hint(const ExportResult& result, const std::string& out);

}  // namespace cvtrain
